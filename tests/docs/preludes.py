"""Declarations the pages' C and C++ fragments use, so that a page shows only what matters. Each
prelude is (code at file scope, code at the top of the block's function). The C++ fragments run
inside `ferry::Status Block()`, the C ones inside `void Block(void)`."""

CPP = {
    # `schema` and `host`: a CPU ArrowDeviceArray of int32 values and its schema.
    "host_array": ("", """
  auto schema_owner = ferry::Field::Make("i", "x").Export().ValueOrDie();
  const ArrowSchema* schema = schema_owner.get();
  auto values = ferry::ArrayFromJson(schema, "[1, null, 3, 4]").ValueOrDie();
  ferry::UniqueDeviceArray host_owner;
  FERRY_RETURN_NOT_OK(ferry::CpuDevice()->InitArray(host_owner.get(), values.get(), nullptr,
                                                    nullptr));
  ArrowDeviceArray* host = host_owner.get();
"""),
    # `gpu` (CUDA device 0) and `bytes`, a size to allocate.
    "gpu": ("", """
  FERRY_ASSIGN_OR_RAISE(ferry::Device* gpu, ferry::ResolveDevice(ARROW_DEVICE_CUDA, 0));
  const int64_t bytes = 1 << 20;
"""),
    # `h`, a CUDA IPC handle exported by another process: a child forked before this process
    # touches CUDA allocates 1 MiB on GPU 0, exports it and keeps it until this block is done.
    "peer_handle": ("""
#include <sys/wait.h>
// Tells the exporting child that the peer is done (at the end of the block), then reaps it.
struct ExporterDone {
  int fd;
  pid_t pid;
  ~ExporterDone() {
    const char c = 1;
    (void)::write(fd, &c, 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};
""", """
  int handle_pipe[2];
  int done_pipe[2];
  if (::pipe(handle_pipe) != 0 || ::pipe(done_pipe) != 0) return ferry::Status::IOError("pipe");
  const pid_t exporter = ::fork();
  if (exporter == 0) {
    ferry::Device* its_gpu = ferry::ResolveDevice(ARROW_DEVICE_CUDA, 0).ValueOrDie();
    void* its_block = its_gpu->Allocate(1 << 20, nullptr).ValueOrDie();
    const ferry::CudaIpcMemHandle exported =
        ferry::ExportCudaIpcMemHandle(*its_gpu, its_block).ValueOrDie();
    (void)::write(handle_pipe[1], &exported, sizeof(exported));
    char c = 0;
    (void)::read(done_pipe[0], &c, 1);
    its_gpu->Free(its_block, 1 << 20);
    ::_exit(0);
  }
  ExporterDone exporter_done{done_pipe[1], exporter};
  ferry::CudaIpcMemHandle h;
  if (::read(handle_pipe[0], &h, sizeof(h)) != static_cast<ssize_t>(sizeof(h))) {
    return ferry::Status::IOError("the exporting process sent no handle");
  }
"""),
    # `socket` (a descriptor with an IPC stream to read) and ReadExactly(fd, n).
    "socket": ("""
static ferry::SharedBytes ReadExactly(int fd, int64_t n) {
  auto buffer = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n));
  int64_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd, buffer->data() + done, static_cast<size_t>(n - done));
    if (got <= 0) break;
    done += got;
  }
  return ferry::SharedBytes{buffer->data(), done, buffer};
}
""", """
  const int socket = ::open("weather.arrows", O_RDONLY);
  if (socket < 0) return ferry::Status::IOError("cannot open weather.arrows");
"""),
    # `schema` and `batch`: a record batch (a struct array) of two columns.
    "batch": ("", """
  auto schema_owner = ferry::Field::Make("+s", "", {ferry::Field::Make("l", "id"),
                                                   ferry::Field::Make("u", "city")})
                          .Export().ValueOrDie();
  const ArrowSchema* schema = schema_owner.get();
  auto batch_owner = ferry::ArrayFromJson(
      schema, R"([{"id": 1, "city": "Oslo"}, {"id": 2, "city": null}])").ValueOrDie();
  const ArrowArray* batch = batch_owner.get();
"""),
    # `schema` for the JSON page: struct<a: int32, b: list<string>>.
    "json_schema": ("", """
  auto schema_owner = ferry::Field::Make("+s", "", {ferry::Field::Make("i", "a"),
      ferry::Field::Make("+l", "b", {ferry::Field::Make("u", "item")})}).Export().ValueOrDie();
  const ArrowSchema* schema = schema_owner.get();
"""),
    # `schema` and `array`: a list<int32> array to validate.
    "array": ("", """
  auto schema_owner = ferry::Field::Make("+l", "a", {ferry::Field::Make("i", "item")})
                          .Export().ValueOrDie();
  const ArrowSchema* schema = schema_owner.get();
  auto array_owner = ferry::ArrayFromJson(schema, "[[1, 2], null, [3]]").ValueOrDie();
  const ArrowArray* array = array_owner.get();
"""),
    # `owner`, `data` and `bytes`: twelve int64 values in memory some owner keeps.
    "memory": ("", """
  auto storage = std::make_shared<std::vector<int64_t>>(12, 7);
  std::shared_ptr<const void> owner = storage;
  uint8_t* data = reinterpret_cast<uint8_t*>(storage->data());
  const int64_t bytes = 12 * 8;
"""),
    # `schema_and_array`: an int32 array on CUDA device 0 with its schema (the memview page).
    "gpu_array": ("", """
  using namespace ferry::memview;
  auto schema_owner = ferry::Field::Make("i", "x").Export().ValueOrDie();
  auto values = ferry::ArrayFromJson(schema_owner.get(), "[1, 2, 3]").ValueOrDie();
  ferry::UniqueDeviceArray on_cpu;
  FERRY_RETURN_NOT_OK(ferry::CpuDevice()->InitArray(on_cpu.get(), values.get(), nullptr, nullptr));
  FERRY_ASSIGN_OR_RAISE(ferry::Device* gpu, ferry::ResolveDevice(ARROW_DEVICE_CUDA, 0));
  FERRY_ASSIGN_OR_RAISE(auto view, ferry::DeviceArrayView::Make(schema_owner.get()));
  FERRY_RETURN_NOT_OK(view.SetArray(on_cpu.get()));
  FERRY_ASSIGN_OR_RAISE(ferry::UniqueDeviceArray on_gpu, view.Copy(*gpu));
  DeviceArrayOwner schema_and_array{std::move(schema_owner), std::move(on_gpu)};
"""),
}

C = {
    # `error` and `uri`, a buffer for a URI.
    "error_uri": ("", """
  struct FerryError error;
  char uri[4096];
"""),
    # `schema` and `array`: a string array made from JSON (a static one-node schema).
    "c_array": ("""
static void ReleaseStaticSchema(struct ArrowSchema* schema) { schema->release = NULL; }
""", """
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  schema.format = "u";
  schema.name = "s";
  schema.flags = ARROW_FLAG_NULLABLE;
  schema.release = &ReleaseStaticSchema;
  struct ArrowArray array;
  struct FerryError json_error;
  if (FerryArrayFromJson(&schema, "[\\"a\\", null, \\"ccc\\"]", &array, &json_error) != 0) {
    fprintf(stderr, "prelude: %s\\n", json_error.message);
    return;
  }
"""),
    # An exporter registered as "numo.NArray" (a Ruby extension's tag) for `obj`, a 3 x 4 matrix
    # of int64, and `error`.
    "numo": ("""
static int64_t numo_values[12];
static const int64_t numo_shape[2] = {3, 4};
static FerryErrorCode NumoGet(void* obj, int32_t flags, struct FerryMemoryView* view,
                              struct FerryError* error) {
  (void)flags;
  (void)error;
  view->obj = obj;
  view->data = numo_values;
  view->byte_size = sizeof(numo_values);
  view->readonly = 1;
  view->format = "q";
  view->item_size = 8;
  view->ndim = 2;
  view->shape = numo_shape;
  return 0;
}
""", """
  struct FerryError error;
  struct FerryMemoryViewExporter exporter = {&NumoGet, NULL, NULL};
  if (FerryMemoryViewRegister("numo.NArray", &exporter, &error) != 0) {
    fprintf(stderr, "prelude: %s\\n", error.message);
    return;
  }
  void* obj = numo_values;
"""),
}
