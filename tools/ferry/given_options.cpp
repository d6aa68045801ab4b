// The options a command line gave, and the refusal of those a command's mode does not honour.
#include "given_options.hpp"

#include "dipc_commands.hpp"

namespace ferry::cli {

Given GivenOptions(const CLI::App& cmd) {
  Given given;
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->count() > 0 && !option->get_lnames().empty()) {
      given.insert("--" + option->get_lnames().front());
    }
  }
  return given;
}

int RefuseGiven(const Given& given, std::initializer_list<Unhonoured> options) {
  for (const Unhonoured& o : options) {
    if (given.count(o.option) > 0) return Fail(o.option, Status::Invalid(o.why));
  }
  return 0;
}

}  // namespace ferry::cli
