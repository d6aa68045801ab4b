// The shared type cases (see type_cases.hpp).
#include "support/type_cases.hpp"

namespace ferry::testing {

namespace {

Json Str(std::mt19937_64& rng, int64_t i) {
  static const char* kWords[] = {"",       "a",   "héllo", "ferry", "a longer string value over 12",
                                 "日本語", "x\ny"};
  return std::string(kWords[(rng() + static_cast<uint64_t>(i)) % 7]);
}

Json HexBytes(std::mt19937_64& rng, int64_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (int64_t k = 0; k < n; ++k) {
    const auto b = static_cast<unsigned>(rng() & 0xFF);
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 15]);
  }
  return s;
}

Json IntIn(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  return d(rng);
}

std::vector<TypeCase> AllTypes() {
  std::vector<TypeCase> cases;
  auto add = [&](std::string name, Field f, Gen g) {
    cases.push_back({std::move(name), std::move(f), std::move(g)});
  };
  auto ints = [](int64_t lo, int64_t hi) {
    return [lo, hi](std::mt19937_64& r, int64_t) { return IntIn(r, lo, hi); };
  };
  add("null", Field::Make("n", "x"), [](std::mt19937_64&, int64_t) { return Json(nullptr); });
  add("bool", Field::Make("b", "x"),
      [](std::mt19937_64& r, int64_t) { return Json((r() & 1) != 0); });
  add("int8", Field::Make("c", "x"), ints(-128, 127));
  add("uint8", Field::Make("C", "x"), ints(0, 255));
  add("int16", Field::Make("s", "x"), ints(-32768, 32767));
  add("uint16", Field::Make("S", "x"), ints(0, 65535));
  add("int32", Field::Make("i", "x"), ints(INT32_MIN, INT32_MAX));
  add("uint32", Field::Make("I", "x"), ints(0, UINT32_MAX));
  add("int64", Field::Make("l", "x"), ints(INT64_MIN, INT64_MAX));
  add("uint64", Field::Make("L", "x"), [](std::mt19937_64& r, int64_t) { return Json(r()); });
  add("halffloat", Field::Make("e", "x"), [](std::mt19937_64& r, int64_t) {
    return Json(static_cast<double>(IntIn(r, -400, 400)) / 4);
  });
  add("float", Field::Make("f", "x"), [](std::mt19937_64& r, int64_t) {
    return Json(static_cast<double>(IntIn(r, -1 << 20, 1 << 20)) / 8);
  });
  add("double", Field::Make("g", "x"), [](std::mt19937_64& r, int64_t) {
    return Json(std::ldexp(static_cast<double>(IntIn(r, -1'000'000'000, 1'000'000'000)), -7));
  });
  add("decimal32", Field::Make("d:9,2,32", "x"), [](std::mt19937_64& r, int64_t) {
    return Json(std::to_string(IntIn(r, -9999999, 9999999).get<int64_t>() / 100) + ".25");
  });
  add("decimal64", Field::Make("d:18,3,64", "x"), [](std::mt19937_64& r, int64_t) {
    // Appended, not `"-" + std::string&&`: GCC PR 105651's bogus -Wrestrict in Release.
    return Json(std::string("-")
                    .append(std::to_string(IntIn(r, 0, 999999999999).get<int64_t>()))
                    .append(".125"));
  });
  add("decimal128", Field::Make("d:38,10", "x"), [](std::mt19937_64& r, int64_t) {
    return Json(std::to_string(IntIn(r, 1, 999999999999999999).get<int64_t>()) + "12345678." +
                "0123456789");
  });
  add("decimal256", Field::Make("d:76,0,256", "x"), [](std::mt19937_64& r, int64_t i) {
    std::string digits = i % 2 ? "-" : "";  // appended: GCC PR 105651
    digits += std::to_string(IntIn(r, 1, 999999999).get<int64_t>());
    for (int k = 0; k < 6; ++k)
      digits += std::to_string(IntIn(r, 100000000, 999999999).get<int64_t>());
    return Json(digits);
  });
  add("fixed_size_binary", Field::Make("w:5", "x"),
      [](std::mt19937_64& r, int64_t) { return HexBytes(r, 5); });
  add("binary", Field::Make("z", "x"),
      [](std::mt19937_64& r, int64_t i) { return HexBytes(r, i % 20); });
  add("large_binary", Field::Make("Z", "x"),
      [](std::mt19937_64& r, int64_t i) { return HexBytes(r, i % 7); });
  add("binary_view", Field::Make("vz", "x"),
      [](std::mt19937_64& r, int64_t i) { return HexBytes(r, i % 30); });
  add("string", Field::Make("u", "x"), Str);
  add("large_string", Field::Make("U", "x"), Str);
  add("string_view", Field::Make("vu", "x"), Str);
  add("date32", Field::Make("tdD", "x"), ints(-100000, 100000));
  add("date64", Field::Make("tdm", "x"), ints(-8640000000000, 8640000000000));
  add("time32_s", Field::Make("tts", "x"), ints(0, 86399));
  add("time32_ms", Field::Make("ttm", "x"), ints(0, 86399999));
  add("time64_us", Field::Make("ttu", "x"), ints(0, 86399999999));
  add("time64_ns", Field::Make("ttn", "x"), ints(0, 86399999999999));
  add("timestamp", Field::Make("tsu:", "x"), ints(INT64_MIN / 2, INT64_MAX / 2));
  add("timestamp_tz", Field::Make("tsn:Europe/Paris", "x"), ints(INT64_MIN, INT64_MAX));
  add("duration", Field::Make("tDm", "x"), ints(INT64_MIN, INT64_MAX));
  add("interval_months", Field::Make("tiM", "x"), ints(-1000, 1000));
  add("interval_day_time", Field::Make("tiD", "x"), [](std::mt19937_64& r, int64_t) {
    return Json::array({IntIn(r, -1000, 1000), IntIn(r, 0, 86399999)});
  });
  add("interval_month_day_nano", Field::Make("tin", "x"), [](std::mt19937_64& r, int64_t) {
    return Json::array({IntIn(r, -100, 100), IntIn(r, -30, 30), IntIn(r, INT64_MIN, INT64_MAX)});
  });
  auto list_of_ints = [](std::mt19937_64& r, int64_t i) {
    Json l = Json::array();
    for (int64_t k = 0; k < i % 4; ++k) {
      l.push_back(k == 1 ? Json(nullptr) : IntIn(r, -50, 50));
    }
    return l;
  };
  add("list", Field::Make("+l", "x", {Field::Make("i", "item")}), list_of_ints);
  add("large_list", Field::Make("+L", "x", {Field::Make("i", "item")}), list_of_ints);
  add("list_view", Field::Make("+vl", "x", {Field::Make("i", "item")}), list_of_ints);
  add("large_list_view", Field::Make("+vL", "x", {Field::Make("i", "item")}), list_of_ints);
  add("fixed_size_list", Field::Make("+w:3", "x", {Field::Make("s", "item")}),
      [](std::mt19937_64& r, int64_t) {
        return Json::array({IntIn(r, -5, 5), Json(nullptr), IntIn(r, 0, 9)});
      });
  add("struct", Field::Make("+s", "x", {Field::Make("i", "a"), Field::Make("u", "b")}),
      [](std::mt19937_64& r, int64_t i) {
        Json o = Json::object();
        o["a"] = i % 3 == 0 ? Json(nullptr) : IntIn(r, -9, 9);
        o["b"] = Str(r, i);
        return o;
      });
  Field entries = Field::Make("+s", "entries",
                              {Field::Make("u", "key").WithFlags(0), Field::Make("l", "value")});
  add("map", Field::Make("+m", "x", {entries.WithFlags(0)}), [](std::mt19937_64& r, int64_t i) {
    Json m = Json::array();
    for (int64_t k = 0; k < i % 3; ++k) {
      m.push_back(Json::array({std::string("k").append(std::to_string(k)), IntIn(r, 0, 99)}));
    }
    return m;
  });
  add("sparse_union", Field::Make("+us:3,7", "x", {Field::Make("i", "a"), Field::Make("u", "b")}),
      [](std::mt19937_64& r, int64_t i) {
        return i % 2 ? Json::array({3, IntIn(r, -9, 9)}) : Json::array({7, Str(r, i)});
      });
  cases.back().null_value = Json::array({3, nullptr});
  add("dense_union", Field::Make("+ud:0,1", "x", {Field::Make("g", "a"), Field::Make("vu", "b")}),
      [](std::mt19937_64& r, int64_t i) {
        return i % 3 ? Json::array({0, static_cast<double>(IntIn(r, -9, 9)) / 2})
                     : Json::array({1, Str(r, i)});
      });
  cases.back().null_value = Json::array({0, nullptr});
  for (const char* run_end : {"s", "i", "l"}) {
    add(std::string("run_end_encoded_") + run_end,
        Field::Make("+r", "x",
                    {Field::Make(run_end, "run_ends").WithFlags(0), Field::Make("u", "values")}),
        [](std::mt19937_64& r, int64_t i) { return Json(i % 7 < 3 ? "same" : Str(r, 0)); });
  }
  add("dictionary_int8_string", Field::Dictionary("x", "c", Field::Make("u", "values")),
      [](std::mt19937_64& r, int64_t) {
        return Json(std::string("v").append(std::to_string(r() % 5)));
      });
  add("dictionary_int32_string", Field::Dictionary("x", "i", Field::Make("u", "values"), true),
      [](std::mt19937_64& r, int64_t) {
        return Json(std::string("w").append(std::to_string(r() % 50)));
      });
  add("extension_uuid", Field::Extension("x", "arrow.uuid", "", Field::Make("w:16", "x")),
      [](std::mt19937_64& r, int64_t) { return HexBytes(r, 16); });
  add("list_struct_int32_string",
      Field::Make("+l", "x",
                  {Field::Make("+s", "item", {Field::Make("i", "a"), Field::Make("u", "b")})}),
      [](std::mt19937_64& r, int64_t i) {
        Json l = Json::array();
        for (int64_t k = 0; k < i % 3; ++k) {
          l.push_back(Json{{"a", IntIn(r, 0, 9)}, {"b", Str(r, k)}});
        }
        return l;
      });
  return cases;
}

}  // namespace

const std::vector<TypeCase>& TypeCases() {
  static const std::vector<TypeCase> cases = AllTypes();
  return cases;
}

GeneratedValues GenerateValues(const TypeCase& tc, uint64_t seed, int64_t total, bool nulls) {
  std::mt19937_64 rng(seed);
  GeneratedValues out{Json::array(), Json::array()};
  for (int64_t i = 0; i < total; ++i) {
    const bool make_null = nulls && i % 5 == 2;
    Json v = make_null ? Json(nullptr) : tc.gen(rng, i);
    out.values.push_back(v);
    out.rendered.push_back(v.is_null() ? tc.null_value : v);
  }
  // The union cases encode their nulls as a null in the first child.
  if (!tc.null_value.is_null()) out.values = out.rendered;
  return out;
}

}  // namespace ferry::testing
