// The ferry command-line tool: subcommands over the library.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "demo.hpp"
#include "devices_command.hpp"
#include "dipc_commands.hpp"
#include "ferry/core/version.hpp"
#include "ferry/ipc/writer.hpp"
#include "flight_commands.hpp"
#include "ipc_commands.hpp"
#include "parses.hpp"
#include "serve_config.hpp"

namespace {

int Run(int argc, char** argv) {
  CLI::App app{
      "ferry: move Arrow columnar data and N-d arrays between devices, libraries and processes "
      "without copying."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ferry ") + ferry::Version());

  ferry::cli::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo",
      "Build a table with a column of every Arrow type, pass it through the Arrow C data "
      "interface, every device, the IPC format and from process to process (steady-state "
      "throughput), and print one summary table.");
  demo_cmd->add_option("--rows", demo.rows, "Rows in the generated table")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->capture_default_str();
  demo_cmd
      ->add_option("--transfer-mib", demo.transfer_mib,
                   "MiB each timed serve -> get transfer moves (after a warm-up)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  demo_cmd->add_flag("--verbose", demo.verbose,
                     "Show the commands the demo runs and let its child processes log");

  ferry::cli::DevicesOptions devices;
  CLI::App* devices_cmd = app.add_subcommand(
      "devices",
      "List this machine's devices: the CPU, every CUDA GPU and every OpenCL device, and why a "
      "kind is absent.");
  devices_cmd->add_flag("--json", devices.json, "Print JSON (schema ferry.devices/1, docs/cli.md)");
  devices_cmd->add_flag("--all", devices.all, "Also list ferry's guarded test device");

  ferry::cli::IpcOptions ipc;
  CLI::App* inspect_cmd = app.add_subcommand(
      "inspect",
      "List the messages of an Arrow IPC stream or file: schema, dictionaries, batches.");
  inspect_cmd->add_option("input", ipc.input, "IPC stream or file")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::App* validate_cmd = app.add_subcommand(
      "validate",
      "Read every batch of an IPC stream or file and validate it; exit 1 on the first error.");
  validate_cmd->add_option("input", ipc.input, "IPC stream or file")
      ->required()
      ->check(CLI::ExistingFile);
  validate_cmd->add_option("--validation", ipc.validation, "none, minimal, default or full")
      ->check(ferry::cli::Parses(ferry::cli::ParseValidation))
      ->capture_default_str();
  CLI::App* cat_cmd =
      app.add_subcommand("cat", "Print the schema and rows of an IPC stream or file as JSON.");
  cat_cmd->add_option("input", ipc.input, "IPC stream or file")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::Option* limit =
      cat_cmd->add_option("--limit", ipc.limit, "Rows shown per batch (-1: all); not with --json")
          ->capture_default_str();
  cat_cmd
      ->add_flag("--json", ipc.json,
                 "Print Arrow integration JSON (the arrow-testing format), which holds every row")
      ->excludes(limit);
  CLI::App* convert_cmd = app.add_subcommand(
      "convert", "Rewrite an IPC stream or file in another format, compression or alignment.");
  convert_cmd->add_option("input", ipc.input, "IPC stream or file")
      ->required()
      ->check(CLI::ExistingFile);
  convert_cmd->add_option("output", ipc.output, "Where to write")->required();
  convert_cmd->add_option("--format", ipc.format, "The IPC format written: stream or file")
      ->check(CLI::IsMember({"stream", "file"}))
      ->capture_default_str();
  convert_cmd->add_option("--compression", ipc.compression, "none, lz4 (or lz4_frame) or zstd")
      ->check(ferry::cli::Parses(ferry::ipc::ParseCompression))
      ->capture_default_str();
  convert_cmd->add_option("--alignment", ipc.alignment, "Body buffer alignment: 8 or 64")
      ->check(CLI::IsMember({8, 64}))
      ->capture_default_str();
  convert_cmd->add_flag("--progress", ipc.progress, "Report batches and bytes written on stderr");
  convert_cmd->add_flag("--emit-dictionary-deltas", ipc.emit_dictionary_deltas,
                        "Write a dictionary that grows by appending as a delta of its new values "
                        "(a file then accepts it), not as a replacement");

  ferry::cli::ServeOptions serve;
  CLI::App* serve_cmd = ferry::cli::AddServeCommand(app, &serve);
  ferry::cli::GetOptions get;
  CLI::App* get_cmd = ferry::cli::AddGetCommand(app, &get);
  ferry::cli::AddFlightGetOptions(get_cmd, &get);
  ferry::cli::FlightOptions flight;
  CLI::App* list_cmd = ferry::cli::AddListCommand(app, &flight);
  CLI::App* put_cmd = ferry::cli::AddPutCommand(app, &flight);
  ferry::cli::FlightOptions status;
  CLI::App* status_cmd = ferry::cli::AddStatusCommand(app, &status);

  CLI::App* version_cmd = app.add_subcommand("version", "Print the version");

  CLI11_PARSE(app, argc, argv);
  serve.given = ferry::cli::GivenOptions(*serve_cmd);
  get.given = ferry::cli::GivenOptions(*get_cmd);
  flight.given = ferry::cli::GivenOptions(*list_cmd ? *list_cmd : *put_cmd);
  status.given = ferry::cli::GivenOptions(*status_cmd);
  if (*version_cmd) {
    std::printf("ferry %s\n", ferry::Version());
    return 0;
  }
  if (*demo_cmd) return ferry::cli::RunDemo(demo);
  if (*devices_cmd) return ferry::cli::RunDevices(devices);
  if (*inspect_cmd) return ferry::cli::RunInspect(ipc);
  if (*validate_cmd) return ferry::cli::RunValidate(ipc);
  if (*cat_cmd) return ferry::cli::RunCat(ipc);
  if (*convert_cmd) return ferry::cli::RunConvert(ipc);
  if (*serve_cmd) return ferry::cli::RunServeCommand(serve);
  if (*get_cmd) {
    return ferry::cli::IsFlightUri(get.uri) ? ferry::cli::RunFlightGet(get)
                                            : ferry::cli::RunGet(get);
  }
  if (*list_cmd) return ferry::cli::RunList(flight);
  if (*put_cmd) return ferry::cli::RunPut(flight);
  if (*status_cmd) return ferry::cli::RunStatus(status);
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
