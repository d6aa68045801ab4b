// The ferry command-line tool: subcommands over the library.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "demo.hpp"

namespace {

int Run(int argc, char** argv) {
  CLI::App app{
      "ferry: move Arrow columnar data and N-d arrays between devices, libraries and processes "
      "without copying."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ferry 0.1.0"));

  ferry::cli::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo",
      "Build a table with a column of every Arrow type, pass it through the Arrow C data "
      "interface, validate it fully and print a summary.");
  demo_cmd->add_option("--rows", demo.rows, "Rows in the generated table")
      ->check(CLI::Range(int64_t{0}, int64_t{100000000}))
      ->capture_default_str();

  CLI::App* version_cmd = app.add_subcommand("version", "Print the version");

  CLI11_PARSE(app, argc, argv);
  if (*version_cmd) {
    std::puts("ferry 0.1.0");
    return 0;
  }
  if (*demo_cmd) return ferry::cli::RunDemo(demo);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    // CLI11 reports parse errors itself; anything else is a bug worth a clear last word.
    std::fprintf(stderr, "ferry: %s\n", e.what());
    return 1;
  }
}
