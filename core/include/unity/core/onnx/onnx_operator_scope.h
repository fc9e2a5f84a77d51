#pragma once
// Which ONNX operators Unity imports, and for those it deliberately does not, why. An operator
// outside the table that the importer does not know is "missing": training graphs use it and it
// is yet to be implemented. The importer's refusal quotes the table's reason; the ONNX coverage
// report (docs/onnx.md, tests/executor/test_onnx_backend_data.cpp) groups its tests by it.
#include <string_view>

namespace unity {

struct OnnxOutOfScope {
  std::string_view
      category;             // "inference-only", "data-dependent output shape", "control flow", ...
  std::string_view reason;  // one line: why a training plan has no place for it
};

// The entry for an operator Unity deliberately does not import, or nullptr. `domain` as in the
// node ("" and "ai.onnx" are the default domain); a whole domain may be out of scope (ai.onnx.ml).
const OnnxOutOfScope* onnx_out_of_scope(std::string_view domain, std::string_view op_type);

enum class OnnxOperatorStatus {
  Imported,    // the importer maps it (possibly only some variants, or only on constants)
  OutOfScope,  // onnx_out_of_scope has its reason
  Missing,     // not imported yet
};

OnnxOperatorStatus onnx_operator_status(std::string_view domain, std::string_view op_type);

}  // namespace unity
