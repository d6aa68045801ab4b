// Schemas and types: ferry.Schema (an owned ArrowSchema tree, or a node of one) and
// ferry.DataType (the parsed type of a node), both speaking __arrow_c_schema__.
#include "ferry/format/schema.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "capsule.hpp"
#include "ferry/format/metadata.hpp"
#include "objects.hpp"

namespace ferry::python {
namespace {

PySchema Child(const PySchema& s, int64_t i) {
  if (i < 0 || i >= s.schema->n_children) {
    Raise(PyExc_IndexError, "child " + std::to_string(i) + " out of range [0, " +
                                std::to_string(s.schema->n_children) + ")");
  }
  return PySchema{s.owner, s.schema->children[i]};
}

PySchema Build(const std::string& format, const std::string& name, std::vector<PySchema> children,
               bool nullable, std::optional<nb::dict> metadata) {
  Field field = Field::Make(format, name);
  for (const PySchema& child : children)
    field.children.push_back(Unwrap(Field::Import(child.schema)));
  field.flags = nullable ? ARROW_FLAG_NULLABLE : 0;
  if (metadata) {
    for (auto [k, v] : *metadata) {
      auto text = [](nb::handle h) {
        if (PyBytes_Check(h.ptr()))
          return std::string(PyBytes_AsString(h.ptr()), PyBytes_Size(h.ptr()));
        return std::string(nb::str(h).c_str());
      };
      field.metadata.emplace_back(text(k), text(v));
    }
  }
  auto holder = std::make_shared<SchemaHolder>();
  holder->schema = Unwrap(field.Export());
  const ArrowSchema* raw = holder->schema.get();
  return PySchema{std::move(holder), raw};
}

nb::dict MetadataOf(const ArrowSchema* s) {
  nb::dict out;
  for (auto [k, v] : Unwrap(DecodeMetadata(s->metadata))) {
    out[nb::bytes(k.data(), k.size())] = nb::bytes(v.data(), v.size());
  }
  return out;
}

}  // namespace

PySchema SchemaFrom(nb::handle obj) {
  if (nb::isinstance<PySchema>(obj)) return nb::cast<PySchema>(obj);
  if (!nb::hasattr(obj, "__arrow_c_schema__")) {
    Raise(PyExc_TypeError, std::string("expected an object with __arrow_c_schema__, got ") +
                               nb::type_name(obj.type()).c_str());
  }
  nb::object capsule = obj.attr("__arrow_c_schema__")();
  auto holder = std::make_shared<SchemaHolder>();
  holder->schema = TakeSchema(capsule);
  const ArrowSchema* raw = holder->schema.get();
  return PySchema{std::move(holder), raw};
}

void InitSchema(nb::module_& m) {
  nb::enum_<TypeId>(m, "TypeId", "Every Arrow type ferry knows.")
#define FERRY_TYPE(name, id) .value(name, TypeId::id)
      FERRY_TYPE("UNINITIALIZED", kUninitialized) FERRY_TYPE("NULL", kNull) FERRY_TYPE(
          "BOOL", kBool) FERRY_TYPE("INT8", kInt8) FERRY_TYPE("UINT8", kUInt8)
          FERRY_TYPE("INT16", kInt16) FERRY_TYPE("UINT16", kUInt16) FERRY_TYPE(
              "INT32", kInt32) FERRY_TYPE("UINT32", kUInt32) FERRY_TYPE("INT64", kInt64)
              FERRY_TYPE("UINT64", kUInt64) FERRY_TYPE("HALF_FLOAT", kHalfFloat) FERRY_TYPE(
                  "FLOAT", kFloat) FERRY_TYPE("DOUBLE", kDouble) FERRY_TYPE("DECIMAL32", kDecimal32)
                  FERRY_TYPE("DECIMAL64", kDecimal64) FERRY_TYPE(
                      "DECIMAL128", kDecimal128) FERRY_TYPE("DECIMAL256", kDecimal256)
                      FERRY_TYPE("FIXED_SIZE_BINARY", kFixedSizeBinary) FERRY_TYPE(
                          "BINARY", kBinary) FERRY_TYPE("LARGE_BINARY",
                                                        kLargeBinary) FERRY_TYPE("STRING", kString)
                          FERRY_TYPE("LARGE_STRING", kLargeString) FERRY_TYPE(
                              "BINARY_VIEW", kBinaryView) FERRY_TYPE("STRING_VIEW", kStringView)
                              FERRY_TYPE("DATE32", kDate32) FERRY_TYPE(
                                  "DATE64", kDate64) FERRY_TYPE("TIME32", kTime32)
                                  FERRY_TYPE("TIME64", kTime64) FERRY_TYPE(
                                      "TIMESTAMP", kTimestamp) FERRY_TYPE("DURATION", kDuration)
                                      FERRY_TYPE("INTERVAL_MONTHS", kIntervalMonths) FERRY_TYPE(
                                          "INTERVAL_DAY_TIME",
                                          kIntervalDayTime) FERRY_TYPE("INTERVAL_MONTH_DAY_NANO",
                                                                       kIntervalMonthDayNano)
                                          FERRY_TYPE("LIST", kList) FERRY_TYPE("LARGE_LIST",
                                                                               kLargeList)
                                              FERRY_TYPE("LIST_VIEW", kListView) FERRY_TYPE(
                                                  "LARGE_LIST_VIEW", kLargeListView)
                                                  FERRY_TYPE("FIXED_SIZE_LIST", kFixedSizeList)
                                                      FERRY_TYPE("STRUCT", kStruct)
                                                          FERRY_TYPE("MAP", kMap) FERRY_TYPE(
                                                              "SPARSE_UNION", kSparseUnion)
                                                              FERRY_TYPE("DENSE_UNION", kDenseUnion)
                                                                  FERRY_TYPE("RUN_END_ENCODED",
                                                                             kRunEndEncoded)
                                                                      FERRY_TYPE("DICTIONARY",
                                                                                 kDictionary)
                                                                          FERRY_TYPE("EXTENSION",
                                                                                     kExtension);
#undef FERRY_TYPE

  nb::enum_<TimeUnit>(m, "TimeUnit", "The unit of time, timestamp and duration types.")
      .value("SECOND", TimeUnit::kSecond)
      .value("MILLI", TimeUnit::kMilli)
      .value("MICRO", TimeUnit::kMicro)
      .value("NANO", TimeUnit::kNano);

  nb::class_<PyDataType>(m, "DataType", "The parsed type of one schema node (see Schema.type).")
      .def_prop_ro("id", [](const PyDataType& t) { return t.view.type; })
      .def_prop_ro(
          "storage_id", [](const PyDataType& t) { return t.view.storage_type; },
          "The physical type: a dictionary's index type, an extension's storage type.")
      .def_prop_ro("name", [](const PyDataType& t) { return std::string(TypeIdName(t.view.type)); })
      .def_prop_ro(
          "fixed_size", [](const PyDataType& t) { return t.view.fixed_size; },
          "Byte width of fixed_size_binary, list size of fixed_size_list, else 0.")
      .def_prop_ro("decimal_bitwidth", [](const PyDataType& t) { return t.view.decimal_bitwidth; })
      .def_prop_ro("decimal_precision",
                   [](const PyDataType& t) { return t.view.decimal_precision; })
      .def_prop_ro("decimal_scale", [](const PyDataType& t) { return t.view.decimal_scale; })
      .def_prop_ro("time_unit", [](const PyDataType& t) { return t.view.time_unit; })
      .def_prop_ro("timezone", [](const PyDataType& t) { return std::string(t.view.timezone); })
      .def_prop_ro("extension_name",
                   [](const PyDataType& t) { return std::string(t.view.extension_name); })
      .def_prop_ro("extension_metadata",
                   [](const PyDataType& t) {
                     return nb::bytes(t.view.extension_metadata.data(),
                                      t.view.extension_metadata.size());
                   })
      .def_prop_ro("union_type_ids",
                   [](const PyDataType& t) {
                     return std::vector<int>(t.view.union_type_ids.begin(),
                                             t.view.union_type_ids.end());
                   })
      .def("__arrow_c_schema__",
           [](const PyDataType& t) { return SchemaCapsule(Unwrap(CopySchema(t.view.schema))); })
      .def("__str__", [](const PyDataType& t) { return Unwrap(SchemaToString(t.view.schema)); })
      .def("__repr__", [](const PyDataType& t) {
        return "<ferry.DataType " + Unwrap(SchemaToString(t.view.schema)) + ">";
      });

  nb::class_<PySchema>(m, "Schema",
                       "An Arrow schema tree (or one node of it), owned by ferry or moved in from "
                       "any producer of __arrow_c_schema__.")
      .def(
          "__init__",
          [](PySchema* self, const std::string& format, const std::string& name,
             std::vector<PySchema> children, bool nullable, std::optional<nb::dict> metadata) {
            new (self)
                PySchema(Build(format, name, std::move(children), nullable, std::move(metadata)));
          },
          nb::arg("format"), nb::arg("name") = "", nb::arg("children") = std::vector<PySchema>{},
          nb::arg("nullable") = true, nb::arg("metadata") = nb::none(),
          "A schema node of an Arrow C format string (\"l\", \"+s\", \"tsu:UTC\", ...).")
      .def_static("from_arrow", &SchemaFrom, nb::arg("obj"),
                  "Move in the schema of any object with __arrow_c_schema__.")
      .def_prop_ro("format", [](const PySchema& s) { return std::string(s.schema->format); })
      .def_prop_ro(
          "name",
          [](const PySchema& s) { return std::string(s.schema->name ? s.schema->name : ""); })
      .def_prop_ro("flags", [](const PySchema& s) { return s.schema->flags; })
      .def_prop_ro("nullable",
                   [](const PySchema& s) { return (s.schema->flags & ARROW_FLAG_NULLABLE) != 0; })
      .def_prop_ro("metadata", [](const PySchema& s) { return MetadataOf(s.schema); })
      .def_prop_ro("n_children", [](const PySchema& s) { return s.schema->n_children; })
      .def("child", &Child, nb::arg("i"))
      .def_prop_ro("children",
                   [](const PySchema& s) {
                     std::vector<PySchema> out;
                     for (int64_t i = 0; i < s.schema->n_children; ++i) out.push_back(Child(s, i));
                     return out;
                   })
      .def_prop_ro("dictionary",
                   [](const PySchema& s) -> std::optional<PySchema> {
                     if (s.schema->dictionary == nullptr) return std::nullopt;
                     return PySchema{s.owner, s.schema->dictionary};
                   })
      .def_prop_ro("type",
                   [](const PySchema& s) {
                     return PyDataType{s.owner, Unwrap(SchemaView::Make(s.schema))};
                   })
      .def(
          "__arrow_c_schema__",
          [](const PySchema& s) { return SchemaCapsule(Unwrap(CopySchema(s.schema))); },
          "A capsule owning a deep copy of this schema node.")
      .def(
          "equals",
          [](const PySchema& a, nb::handle other, bool check_metadata) {
            return Unwrap(SchemaEquals(a.schema, SchemaFrom(other).schema, check_metadata));
          },
          nb::arg("other"), nb::arg("check_metadata") = false,
          "Whether `other` (any __arrow_c_schema__ producer) describes the same data, as "
          "pyarrow.Schema.equals decides: types, names, nullability, children, dictionaries and "
          "extension types; with check_metadata, every node's key-value metadata too.")
      .def("__eq__",
           [](const PySchema& a, nb::handle b) {
             if (!nb::isinstance<PySchema>(b)) return false;
             return Unwrap(SchemaEquals(a.schema, nb::cast<const PySchema&>(b).schema));
           })
      .def("__str__", [](const PySchema& s) { return Unwrap(SchemaToString(s.schema)); })
      .def("__repr__", [](const PySchema& s) {
        std::string name = s.schema->name ? s.schema->name : "";
        return "<ferry.Schema " + (name.empty() ? "" : name + ": ") +
               Unwrap(SchemaToString(s.schema)) + ">";
      });

  m.def("schema", &SchemaFrom, nb::arg("obj"),
        "Move in the schema of any object with __arrow_c_schema__ (as pa.schema(obj) does).");
}

}  // namespace ferry::python
