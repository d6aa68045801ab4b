// Full validation: ferry's ArrayView against Arrow C++ (ImportArray + ValidateFull) on the same
// buffers, in the same run. Also the raw speed of ferry's UTF-8 validator.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_scale.hpp"
#include "ferry/format/array_bytes.hpp"
#include "ferry/format/array_view.hpp"
#include "ferry/format/builder.hpp"
#include "ferry/format/schema.hpp"
#include "format/utf8.hpp"

#ifdef FERRY_BENCH_WITH_ARROW
#include <arrow/array.h>
#include <arrow/c/bridge.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#endif

namespace ferry {
namespace {

// One data set: an owned schema and array, built once per process.
struct Dataset {
  UniqueSchema schema;
  UniqueArray array;
  int64_t bytes = 0;
};

void Check(const Status& st) {
  if (!st.ok()) {
    std::fprintf(stderr, "benchmark setup failed: %s\n", st.message().c_str());
    std::abort();
  }
}

Dataset Finish(Field field, const std::function<void(ArrayBuilder*)>& fill) {
  Dataset d;
  auto schema = field.Export();
  Check(schema.status());
  d.schema = std::move(schema).ValueOrDie();
  auto builder = ArrayBuilder::Make(d.schema.get());
  Check(builder.status());
  fill(builder->get());
  auto array = (*builder)->Finish();
  Check(array.status());
  d.array = std::move(array).ValueOrDie();
  auto view = ArrayView::Make(d.schema.get());
  Check(view.status());
  Check(view->SetArray(d.array.get()));
  Check(view->Validate(ValidationLevel::kFull));
  d.bytes = ViewBytes(*view);
  return d;
}

// 0-16 letters, about one in 50 a multi-byte character unless `ascii`.
std::string ShortString(std::mt19937_64& rng, bool ascii = false) {
  static const char* kMultibyte[] = {"é", "ß", "日", "€", "😀"};
  std::string s;
  const int n = static_cast<int>(rng() % 17);
  for (int i = 0; i < n; ++i) {
    if (!ascii && rng() % 50 == 0) {
      s += kMultibyte[rng() % 5];
    } else {
      s.push_back(static_cast<char>('a' + rng() % 26));
    }
  }
  return s;
}

const Dataset& Int64s() {
  static Dataset d = Finish(Field::Make("l", "x"), [](ArrayBuilder* b) {
    std::mt19937_64 rng(1);
    for (int64_t i = 0, n = testing::ScaledCount(10'000'000); i < n; ++i) {
      Check(rng() % 10 == 0 ? b->AppendNull() : b->AppendInt(static_cast<int64_t>(rng())));
    }
  });
  return d;
}

// 10 M strings of 0-16 letters (`format` "u" or "vu"; 100,000 in a smoke run), 10% nulls; all
// ASCII when `ascii`.
Dataset ShortStrings(const char* format, bool ascii) {
  return Finish(Field::Make(format, "x"), [ascii](ArrayBuilder* b) {
    std::mt19937_64 rng(2);
    for (int64_t i = 0, n = testing::ScaledCount(10'000'000); i < n; ++i) {
      Check(rng() % 10 == 0 ? b->AppendNull() : b->AppendBytes(ShortString(rng, ascii)));
    }
  });
}

const Dataset& Strings() {
  static Dataset d = ShortStrings("u", false);
  return d;
}

// The same lengths and nulls, every character ASCII (identifiers, codes, digits).
const Dataset& AsciiStrings() {
  static Dataset d = ShortStrings("u", true);
  return d;
}

// The mixed strings as string views (`vu`): those of 13 bytes or more in the data buffers.
const Dataset& StringViews() {
  static Dataset d = ShortStrings("vu", false);
  return d;
}

// The ASCII strings as string views.
const Dataset& AsciiStringViews() {
  static Dataset d = ShortStrings("vu", true);
  return d;
}

const Dataset& ListsOfStructs() {
  Field item = Field::Make("+s", "item", {Field::Make("i", "a"), Field::Make("u", "b")});
  static Dataset d = Finish(Field::Make("+l", "x", {item}), [](ArrayBuilder* b) {
    std::mt19937_64 rng(3);
    ArrayBuilder* s = b->child(0);
    for (int64_t i = 0, lists = testing::ScaledCount(1'000'000); i < lists; ++i) {
      if (rng() % 10 == 0) {
        Check(b->AppendNull());
        continue;
      }
      const int n = static_cast<int>(rng() % 6);
      for (int k = 0; k < n; ++k) {
        Check(s->child(0)->AppendInt(static_cast<int32_t>(rng())));
        Check(s->child(1)->AppendBytes(ShortString(rng)));
        Check(s->FinishElement());
      }
      Check(b->FinishElement());
    }
  });
  return d;
}

void RunFerry(benchmark::State& state, const Dataset& d) {
  for (auto _ : state) {
    auto view = ArrayView::Make(d.schema.get());
    Status st = view.ok() ? view->SetArray(d.array.get()) : view.status();
    if (st.ok()) st = view->Validate(ValidationLevel::kFull);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(view);
  }
  state.SetBytesProcessed(state.iterations() * d.bytes);
  state.SetItemsProcessed(state.iterations() * d.array->length);
}

#ifdef FERRY_BENCH_WITH_ARROW
// A shallow copy of an ArrowArray tree that Arrow may import and release: its release frees only
// the copied structs, never the buffers, which stay owned by the dataset.
struct Shallow {
  std::vector<std::unique_ptr<ArrowArray>> nodes;
  std::vector<std::vector<ArrowArray*>> child_lists;
};

ArrowArray* CopyNode(const ArrowArray* src, Shallow* owner) {
  owner->nodes.push_back(std::make_unique<ArrowArray>(*src));
  ArrowArray* dst = owner->nodes.back().get();
  dst->release = [](ArrowArray* a) { a->release = nullptr; };
  dst->private_data = nullptr;
  if (src->n_children > 0) {
    owner->child_lists.emplace_back();
    auto& list = owner->child_lists.back();
    for (int64_t i = 0; i < src->n_children; ++i) list.push_back(CopyNode(src->children[i], owner));
    dst->children = list.data();
  }
  if (src->dictionary != nullptr) dst->dictionary = CopyNode(src->dictionary, owner);
  return dst;
}

// Times `check(array)` on a fresh shallow copy of `d`'s array each iteration (the copy untimed):
// Arrow C++'s import of it and its validation. Stops the benchmark on the first failure.
template <typename Check>
void TimeArrow(benchmark::State& state, const Dataset& d, Check check) {
  for (auto _ : state) {
    state.PauseTiming();
    Shallow shallow;
    shallow.child_lists.reserve(64);
    ArrowArray* c_array = CopyNode(d.array.get(), &shallow);
    state.ResumeTiming();
    const arrow::Status st = check(c_array);
    if (!st.ok()) {
      state.SkipWithError(st.ToString().c_str());
      return;
    }
  }
}

void RunArrow(benchmark::State& state, const Dataset& d) {
  auto type = arrow::ImportType(CopySchema(d.schema.get()).ValueOrDie().get());
  if (!type.ok()) {
    state.SkipWithError(type.status().ToString().c_str());
    return;
  }
  TimeArrow(state, d, [&](ArrowArray* c_array) {
    auto imported = arrow::ImportArray(c_array, *type);
    return imported.ok() ? (*imported)->ValidateFull() : imported.status();
  });
  state.SetBytesProcessed(state.iterations() * d.bytes);
  state.SetItemsProcessed(state.iterations() * d.array->length);
}
#endif

void BM_ValidateFull_Int64_10M_Ferry(benchmark::State& s) { RunFerry(s, Int64s()); }
void BM_ValidateFull_Strings_10M_Ferry(benchmark::State& s) { RunFerry(s, Strings()); }
void BM_ValidateFull_AsciiStrings_10M_Ferry(benchmark::State& s) { RunFerry(s, AsciiStrings()); }
void BM_ValidateFull_StringViews_10M_Ferry(benchmark::State& s) { RunFerry(s, StringViews()); }
void BM_ValidateFull_AsciiStringViews_10M_Ferry(benchmark::State& s) {
  RunFerry(s, AsciiStringViews());
}
void BM_ValidateFull_ListStruct_1M_Ferry(benchmark::State& s) { RunFerry(s, ListsOfStructs()); }
BENCHMARK(BM_ValidateFull_Int64_10M_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_Strings_10M_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_AsciiStrings_10M_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_StringViews_10M_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_AsciiStringViews_10M_Ferry)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_ListStruct_1M_Ferry)->Unit(benchmark::kMillisecond);

#ifdef FERRY_BENCH_WITH_ARROW
void BM_ValidateFull_Int64_10M_ArrowCpp(benchmark::State& s) { RunArrow(s, Int64s()); }
void BM_ValidateFull_Strings_10M_ArrowCpp(benchmark::State& s) { RunArrow(s, Strings()); }
void BM_ValidateFull_AsciiStrings_10M_ArrowCpp(benchmark::State& s) { RunArrow(s, AsciiStrings()); }
void BM_ValidateFull_StringViews_10M_ArrowCpp(benchmark::State& s) { RunArrow(s, StringViews()); }
void BM_ValidateFull_AsciiStringViews_10M_ArrowCpp(benchmark::State& s) {
  RunArrow(s, AsciiStringViews());
}
void BM_ValidateFull_ListStruct_1M_ArrowCpp(benchmark::State& s) { RunArrow(s, ListsOfStructs()); }
BENCHMARK(BM_ValidateFull_Int64_10M_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_Strings_10M_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_AsciiStrings_10M_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_StringViews_10M_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_AsciiStringViews_10M_ArrowCpp)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFull_ListStruct_1M_ArrowCpp)->Unit(benchmark::kMillisecond);
#endif

// The small-batch benchmark's batch (bench/dipc/small_batches.cpp): 1,000 rows of x int64,
// f float64 and s a short string, as a struct. What a writer or a decoder pays per batch to
// check a batch at the default level, with the view kept across batches as they keep it.
const Dataset& SmallBatch() {
  static Dataset d = Finish(
      Field::Make("+s", "", {Field::Make("l", "x"), Field::Make("g", "f"), Field::Make("u", "s")}),
      [](ArrayBuilder* b) {
        for (int64_t i = 0; i < 1000; ++i) {
          Check(b->child(0)->AppendInt(i));
          Check(b->child(1)->AppendDouble(static_cast<double>(i) * 0.5));
          Check(b->child(2)->AppendBytes("v" + std::to_string(i % 1000)));
          Check(b->FinishElement());
        }
      });
  return d;
}

void BM_ValidateDefault_SmallBatch_Ferry(benchmark::State& state) {
  const Dataset& d = SmallBatch();
  auto view = ArrayView::Make(d.schema.get());
  Check(view.status());
  for (auto _ : state) {
    Status st = view->SetArray(d.array.get());
    if (st.ok()) st = view->Validate(ValidationLevel::kDefault);
    view->Reset();
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ValidateDefault_SmallBatch_Ferry);

#ifdef FERRY_BENCH_WITH_ARROW
// Arrow C++'s equivalent: a record batch's import and its Validate() (the O(1) checks).
void BM_ValidateDefault_SmallBatch_ArrowCpp(benchmark::State& state) {
  const Dataset& d = SmallBatch();
  auto schema = arrow::ImportSchema(CopySchema(d.schema.get()).ValueOrDie().get());
  if (!schema.ok()) {
    state.SkipWithError(schema.status().ToString().c_str());
    return;
  }
  TimeArrow(state, d, [&](ArrowArray* c_array) {
    auto batch = arrow::ImportRecordBatch(c_array, *schema);
    return batch.ok() ? (*batch)->Validate() : batch.status();
  });
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ValidateDefault_SmallBatch_ArrowCpp);
#endif

// 64 MiB of text: ASCII only, or with a multi-byte character about every 50 bytes.
const std::string& Text(bool multibyte) {
  static std::string ascii;
  static std::string mixed;
  std::string& out = multibyte ? mixed : ascii;
  if (out.empty()) {
    std::mt19937_64 rng(4);
    while (out.size() < (64u << 20)) {
      out += (multibyte && rng() % 50 == 0) ? std::string("é") : std::string(1, 'a' + rng() % 26);
    }
  }
  return out;
}

// The validator full validation uses (vector where the CPU has AVX2), then the scalar one, on the
// same text in the same run.
template <bool (*Validate)(const uint8_t*, int64_t) noexcept>
void RunUtf8(benchmark::State& state) {
  const std::string& text = Text(state.range(0) != 0);
  for (auto _ : state) {
    bool ok =
        Validate(reinterpret_cast<const uint8_t*>(text.data()), static_cast<int64_t>(text.size()));
    if (!ok) state.SkipWithError("text rejected");
    benchmark::DoNotOptimize(ok);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

void BM_Utf8(benchmark::State& state) { RunUtf8<internal::ValidateUtf8>(state); }
void BM_Utf8Scalar(benchmark::State& state) { RunUtf8<internal::ValidateUtf8Scalar>(state); }
BENCHMARK(BM_Utf8)->Arg(0)->Arg(1)->ArgNames({"multibyte"})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Utf8Scalar)->Arg(0)->Arg(1)->ArgNames({"multibyte"})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry
