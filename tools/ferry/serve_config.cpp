// `ferry serve`'s settings table, and what it drives: the flags, the TOML file, the effective
// configuration and the reference (serve_config.hpp).
#include "serve_config.hpp"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>
#include <variant>

#include "serve_keys.hpp"

namespace ferry::cli {

namespace {
// "--verbose" of "-v,--verbose": the name `Given` holds.
std::string LongFlag(const Key& k) {
  const std::string flag = k.flag;
  const size_t comma = flag.rfind(',');
  return comma == std::string::npos ? flag : flag.substr(comma + 1);
}

std::string Group(const Key& k) {
  const std::string key = k.key;
  return key.substr(0, key.find('.'));
}

std::string Leaf(const Key& k) {
  const std::string key = k.key;
  const size_t dot = key.find('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

const char* TypeName(Kind kind) {
  switch (kind) {
    case Kind::kString:
      return "string";
    case Kind::kPath:
      return "path";
    case Kind::kBool:
      return "boolean";
    case Kind::kInt:
      return "integer";
    case Kind::kBytes:
      return "bytes";
    case Kind::kSeconds:
      return "seconds";
    case Kind::kStrings:
      return "array of strings";
    case Kind::kDatasets:
      return "table";
  }
  return "";
}

// The row's value in `o` as a TOML node.
std::unique_ptr<toml::node> Value(const Key& k, const ServeOptions& o) {
  if (k.kind == Kind::kDatasets || k.kind == Kind::kStrings) {
    const auto& values = o.*std::get<std::vector<std::string> ServeOptions::*>(k.field);
    if (k.kind == Kind::kStrings) {
      auto array = std::make_unique<toml::array>();
      for (const std::string& v : values) array->push_back(v);
      return array;
    }
    auto table = std::make_unique<toml::table>();
    for (const auto& [name, file] : DatasetMap(values)) table->insert_or_assign(name, file);
    return table;
  }
  return std::visit(
      [&](auto member) -> std::unique_ptr<toml::node> {
        using T = std::decay_t<decltype(o.*member)>;
        if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, int>) {
          return std::make_unique<toml::value<int64_t>>(int64_t{o.*member});
        } else {
          return std::make_unique<toml::value<T>>(o.*member);
        }
      },
      k.field);
}

std::string ValueText(const Key& k, const ServeOptions& o) {
  std::ostringstream out;
  const std::unique_ptr<toml::node> v = Value(k, o);
  v->visit([&](const auto& node) { out << node; });
  return out.str();
}

std::string Where(const std::string& path, const toml::source_region& at) {
  return path + ":" + std::to_string(at.begin.line) + ":" + std::to_string(at.begin.column) + ": ";
}

// `text` through the row's checks, as the flag's value would go (a kBytes value turned into
// bytes first); the check's message when one refuses it.
Status Check(const Key& k, std::string* text) {
  if (k.kind == Kind::kBytes) {
    const std::string error = CLI::AsSizeValue(false)(*text);
    if (!error.empty()) return Status::Invalid(error);
  }
  for (const CLI::Validator& check : k.checks) {
    const std::string error = check(*text);
    if (!error.empty()) return Status::Invalid(error);
  }
  return Status::OK();
}

std::string Resolve(const std::filesystem::path& dir, const std::string& value) {
  if (value.empty() || std::filesystem::path(value).is_absolute()) return value;
  return (dir / value).lexically_normal().string();
}

// Set row `k` of `o` from `node`, checked as the flag would be.
Status SetFromNode(const Key& k, const toml::node& node, const std::string& path,
                   const std::filesystem::path& dir, ServeOptions* o) {
  const std::string where = Where(path, node.source()) + k.key + ": ";
  std::ostringstream shown;
  node.visit([&](const auto& n) { shown << n; });
  auto wrong = [&](const char* expected) {
    std::ostringstream got;
    got << node.type();
    const char* article = got.str().find_first_of("aeiou") == 0 ? "an " : "a ";
    return Status::Invalid(where + "expected " + expected + ", not " + article + got.str() + " (" +
                           shown.str() + ")");
  };
  auto refused = [&](const Status& st) { return Status::Invalid(where + st.message()); };
  switch (k.kind) {
    case Kind::kString:
    case Kind::kPath: {
      if (!node.is_string()) return wrong("a string");
      std::string text = node.as_string()->get();
      // An empty string is a setting's unset default ("" transport: the mode's planes).
      const bool unset =
          text.empty() && (ServeOptions{}.*std::get<std::string ServeOptions::*>(k.field)).empty();
      if (const Status st = unset ? Status::OK() : Check(k, &text); !st.ok()) return refused(st);
      if (k.kind == Kind::kPath) text = Resolve(dir, text);
      o->*std::get<std::string ServeOptions::*>(k.field) = text;
      return Status::OK();
    }
    case Kind::kBool:
      if (!node.is_boolean()) return wrong("a boolean (true or false)");
      o->*std::get<bool ServeOptions::*>(k.field) = node.as_boolean()->get();
      return Status::OK();
    case Kind::kInt:
    case Kind::kBytes: {
      std::string text;
      if (node.is_integer()) {
        text = std::to_string(node.as_integer()->get());
      } else if (k.kind == Kind::kBytes && node.is_string()) {
        text = node.as_string()->get();
      } else {
        return wrong(k.kind == Kind::kInt ? "an integer" : "an integer or a string (\"256MiB\")");
      }
      if (const Status st = Check(k, &text); !st.ok()) return refused(st);
      const long long value = std::stoll(text);
      if (k.kind == Kind::kInt) {
        if (value > std::numeric_limits<int>::max()) return refused(Status::Invalid("too large"));
        o->*std::get<int ServeOptions::*>(k.field) = static_cast<int>(value);
      } else {
        o->*std::get<int64_t ServeOptions::*>(k.field) = value;
      }
      return Status::OK();
    }
    case Kind::kSeconds: {
      double value = 0;
      if (node.is_integer()) {
        value = static_cast<double>(node.as_integer()->get());
      } else if (node.is_floating_point()) {
        value = node.as_floating_point()->get();
      } else {
        return wrong("seconds (a number)");
      }
      std::string text = shown.str();
      if (const Status st = Check(k, &text); !st.ok()) return refused(st);
      o->*std::get<double ServeOptions::*>(k.field) = value;
      return Status::OK();
    }
    case Kind::kStrings: {
      if (!node.is_array()) return wrong("an array of strings");
      std::vector<std::string> values;
      for (const toml::node& item : *node.as_array()) {
        if (!item.is_string()) {
          return Status::Invalid(Where(path, item.source()) + k.key +
                                 ": expected an array of strings");
        }
        values.push_back(item.as_string()->get());
      }
      o->*std::get<std::vector<std::string> ServeOptions::*>(k.field) = std::move(values);
      return Status::OK();
    }
    case Kind::kDatasets:
      break;
  }
  return Status::Internal(where + "not a setting");
}

// What is wrong with a file, by where it is, so that the first in the file is told.
struct Problems {
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, Status>> found;
  void Add(const toml::source_region& at, Status st) {
    found.emplace_back(std::pair{at.begin.line, at.begin.column}, std::move(st));
  }
  Status First() const {
    if (found.empty()) return Status::OK();
    auto first = std::min_element(found.begin(), found.end(),
                                  [](const auto& a, const auto& b) { return a.first < b.first; });
    if (found.size() == 1) return first->second;
    return {first->second.code(),
            first->second.message() + " (and " + std::to_string(found.size() - 1) + " more)"};
  }
};

// The [datasets] table: each NAME = "FILE", whose file (directory, pattern) must exist.
std::map<std::string, std::string> ReadDatasets(const toml::node& node, const std::string& path,
                                                const std::filesystem::path& dir,
                                                Problems* problems) {
  std::map<std::string, std::string> out;
  if (!node.is_table()) {
    problems->Add(node.source(), Status::Invalid(Where(path, node.source()) +
                                                 "datasets: expected a table of NAME = \"FILE\""));
    return out;
  }
  for (const auto& [name, value] : *node.as_table()) {
    const std::string where = Where(path, value.source()) + "datasets." + std::string(name.str());
    if (!value.is_string()) {
      problems->Add(value.source(), Status::Invalid(where + ": expected a string (the file)"));
      continue;
    }
    if (name.str().find('=') != std::string_view::npos) {
      problems->Add(name.source(),
                    Status::Invalid(Where(path, name.source()) + "a dataset's name has no '='"));
      continue;
    }
    const std::string target = Resolve(dir, value.as_string()->get());
    struct stat st {};
    if (target.find_first_of("*?[") == std::string::npos && stat(target.c_str(), &st) != 0) {
      std::string message = where + ": ";
      message += target;
      message += " does not exist";
      problems->Add(value.source(), Status::NotFound(message));
      continue;
    }
    Result<std::vector<std::string>> files = ExpandFiles(target);
    if (!files.ok()) {
      problems->Add(value.source(), Status::NotFound(where + ": " + files.status().message()));
      continue;
    }
    out[std::string(name.str())] = target;
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> DatasetMap(const std::vector<std::string>& specs) {
  std::map<std::string, std::string> out;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq != std::string::npos) out[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  return out;
}

Status LoadServeConfig(const std::string& path, ServeOptions* o) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    if (e.source().begin.line == 0) {
      return Status::NotFound(path +
                              ": cannot read the config file: " + std::string(e.description()));
    }
    return Status::Invalid(Where(path, e.source()) + std::string(e.description()));
  }
  const std::filesystem::path dir =
      std::filesystem::absolute(std::filesystem::path(path)).parent_path();
  std::map<std::string, const Key*> by_key;
  std::map<std::string, std::vector<std::string>> groups;
  for (const Key& k : ServeKeys()) {
    by_key[k.key] = &k;
    if (Leaf(k) != k.key) groups[Group(k)].push_back(Leaf(k));
  }
  ServeOptions file;
  std::vector<const Key*> set;
  std::map<std::string, std::string> datasets;
  Problems problems;
  for (const auto& [group, node] : doc) {
    const std::string name(group.str());
    if (name == "datasets") {
      datasets = ReadDatasets(node, path, dir, &problems);
      continue;
    }
    auto known = groups.find(name);
    if (known == groups.end()) {
      std::string names = "datasets";
      for (const auto& [g, leaves] : groups) names += ", " + g;
      std::string message = Where(path, group.source()) + "unknown key \"" + name;
      message += "\" (the tables are " + names + ")";
      problems.Add(group.source(), Status::Invalid(message));
      continue;
    }
    if (!node.is_table()) {
      std::string message = Where(path, node.source()) + name;
      message += ": expected a table ([" + name + "])";
      problems.Add(node.source(), Status::Invalid(message));
      continue;
    }
    for (const auto& [leaf, value] : *node.as_table()) {
      const std::string key = name + "." + std::string(leaf.str());
      auto row = by_key.find(key);
      if (row == by_key.end()) {
        std::string names;
        for (const std::string& l : known->second) names += (names.empty() ? "" : ", ") + l;
        std::string message = Where(path, leaf.source()) + "unknown key \"" + key;
        message += "\" ([" + name + "] has ";
        message += names + ")";
        problems.Add(leaf.source(), Status::Invalid(message));
        continue;
      }
      if (Status st = SetFromNode(*row->second, value, path, dir, &file); !st.ok()) {
        problems.Add(value.source(), std::move(st));
        continue;
      }
      set.push_back(row->second);
    }
  }
  FERRY_RETURN_NOT_OK(problems.First());
  const ServeOptions defaults;
  for (const Key* k : set) {
    const std::string flag = LongFlag(*k);
    if (o->given.count(flag) > 0) continue;  // the command line overrides the file
    std::visit([&](auto member) { o->*member = file.*member; }, k->field);
    // A key at its default is as if unset: the effective configuration --check-config prints,
    // every key in it, serves as the file it was made from.
    if (ValueText(*k, file) != ValueText(*k, defaults)) o->given.insert(flag);
  }
  for (const auto& [name, target] : DatasetMap(o->datasets)) datasets[name] = target;
  o->datasets.clear();
  for (const auto& [name, target] : datasets) {
    std::string spec = name + "=";
    spec += target;
    o->datasets.push_back(std::move(spec));
  }
  o->config = std::filesystem::absolute(std::filesystem::path(path)).lexically_normal().string();
  return Status::OK();
}

std::string FormatServeConfig(const ServeOptions& o) {
  toml::table doc;
  for (const Key& k : ServeKeys()) {
    std::unique_ptr<toml::node> v = Value(k, o);
    if (k.kind == Kind::kDatasets) {
      doc.insert_or_assign(k.key, std::move(*v->as_table()));
      continue;
    }
    auto* group = doc.insert(Group(k), toml::table{}).first->second.as_table();
    v->visit([&](auto& node) { group->insert_or_assign(Leaf(k), std::move(node)); });
  }
  std::ostringstream out;
  out << doc << "\n";
  return out.str();
}

std::string ServeConfigReference() {
  const ServeOptions defaults;
  std::string out = "| Key | Flag | Type | Default | What it sets |\n|---|---|---|---|---|\n";
  for (const Key& k : ServeKeys()) {
    std::string help = k.help;
    for (size_t at = help.find('|'); at != std::string::npos; at = help.find('|', at + 2)) {
      help.replace(at, 1, "\\|");
    }
    const std::string key = k.kind == Kind::kDatasets ? "[datasets] NAME" : k.key;
    const std::string flag = k.kind == Kind::kDatasets ? "NAME=FILE" : LongFlag(k);
    out += "| `" + key + "` | `";
    out += flag + "` | ";
    out += std::string(TypeName(k.kind)) + " | `";
    out += ValueText(k, defaults) + "` | ";
    out += help + " |\n";
  }
  return out;
}

std::vector<std::string> ChangedKeys(const ServeOptions& a, const ServeOptions& b) {
  std::vector<std::string> out;
  for (const Key& k : ServeKeys()) {
    if (k.kind != Kind::kDatasets && ValueText(k, a) != ValueText(k, b)) out.emplace_back(k.key);
  }
  return out;
}

void AddServeKeys(CLI::App* cmd, ServeOptions* o) {
  for (const Key& k : ServeKeys()) {
    CLI::Option* option = nullptr;
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(o->*member)>;
          if constexpr (std::is_same_v<T, bool>) {
            option = cmd->add_flag(k.flag, o->*member, k.help);
          } else {
            option = cmd->add_option(k.flag, o->*member, k.help);
          }
        },
        k.field);
    if (k.kind == Kind::kStrings) option->allow_extra_args(false);
    if (k.kind == Kind::kBytes) option->transform(CLI::AsSizeValue(false));
    for (const CLI::Validator& check : k.checks) option->check(check);
    if (k.kind == Kind::kInt || k.kind == Kind::kBytes || k.kind == Kind::kSeconds ||
        (k.kind == Kind::kString && !option->get_default_str().empty())) {
      option->capture_default_str();
    }
  }
  cmd->add_option("--config", o->config,
                  "Read the settings from this TOML file (docs/operations.md lists its keys); a "
                  "flag given here overrides its key. SIGHUP re-reads its [datasets]");
  cmd->add_option("--check-config", o->check_config,
                  "Check this TOML file, print the effective configuration (the file under the "
                  "flags given) and exit: 0, or 2 naming the file, line and column of the "
                  "first error");
  cmd->add_flag("--config-reference", o->config_reference,
                "Print the settings' reference (Markdown) and exit")
      ->group("");
}

int RunServeCommand(ServeOptions o) {
  if (o.config_reference) {
    std::printf("%s", ServeConfigReference().c_str());
    return 0;
  }
  if (!o.config.empty() && !o.check_config.empty()) {
    return Fail("--check-config", Status::Invalid("checks a file without serving it: give "
                                                  "--config or --check-config, not both"));
  }
  const std::string path = o.check_config.empty() ? o.config : o.check_config;
  if (path.empty()) return RunServe(o);
  o.command_line = std::make_shared<const ServeOptions>(o);
  if (const Status st = LoadServeConfig(path, &o); !st.ok()) {
    std::fprintf(stderr, "ferry: %s\n", st.message().c_str());
    return 2;
  }
  if (o.check_config.empty()) return RunServe(o);
  std::printf("%s", FormatServeConfig(o).c_str());
  return 0;
}

}  // namespace ferry::cli
