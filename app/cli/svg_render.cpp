#include "svg_render.h"

#include <memory>

#include <fmt/format.h>
#include <graphviz/gvc.h>

#include "unity/core/errors.h"
#include "unity/core/json_io.h"

namespace unity::cli {

void render_dot_to_svg(const std::string& dot, const std::filesystem::path& path) {
  std::unique_ptr<GVC_t, decltype(&gvFreeContext)> gvc(gvContext(), gvFreeContext);
  Agraph_t* graph = agmemread(dot.c_str());
  if (!graph) throw std::runtime_error("Graphviz could not parse the generated DOT");
  char* data = nullptr;
  unsigned int length = 0;
  int rc = gvLayout(gvc.get(), graph, "dot");
  if (rc == 0) rc = gvRenderData(gvc.get(), graph, "svg", &data, &length);
  std::string svg = data ? std::string(data, length) : std::string();
  if (data) gvFreeRenderData(data);
  gvFreeLayout(gvc.get(), graph);
  agclose(graph);
  if (rc != 0 || svg.empty()) throw std::runtime_error("Graphviz failed to lay out the graph");
  write_text_file_atomic(path, svg);
}

}  // namespace unity::cli
