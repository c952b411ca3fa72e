#include "traces/html_report.h"

#include <algorithm>

#include "traces/atomic_file.h"
#include "traces/json_util.h"

namespace tpusim::traces {
namespace {

using profiler::Series;

std::string Esc(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  }
  return out;
}

std::string Figure(const char* id, const char* label, double v, const char* unit) {
  return "<div class=fig><div class=lab>" + std::string(label) + "</div><div class=val id=\"" + id +
         "\">" + Fixed(v, 1) + unit + "</div></div>\n";
}

// MXU % (blue) and idle % (grey), averaged over the cores, per timeline bucket.
std::string Chart(const profiler::Recorder& rec) {
  const profiler::Timeline& tl = rec.timeline();
  const size_t nb = tl.num_buckets();
  const int n = std::max(1, rec.num_cores());
  const double w = static_cast<double>(tl.width());
  const int mxus = std::max(1, rec.options().mxus_per_core);
  std::string mxu, idle;
  for (size_t b = 0; b < nb; ++b) {
    double m = 0, u = 0;
    for (int c = 0; c < n; ++c) {
      m += tl.At(c, Series::kMxuBusy, b) / (mxus * w) / n;
      u += tl.At(c, Series::kUnionBusy, b) / w / n;
    }
    const std::string x = Fixed(nb > 1 ? 600.0 * b / (nb - 1) : 0, 1);
    mxu += x + "," + Fixed(200 - 200 * m, 1) + " ";
    idle += x + "," + Fixed(200 * u, 1) + " ";
  }
  return "<svg id=timeline viewBox=\"0 0 600 200\" width=600 height=200>"
         "<rect width=600 height=200 fill=#fafafa stroke=#ccc />"
         "<polyline fill=none stroke=#1a73e8 stroke-width=2 points=\"" +
         mxu +
         "\"/>"
         "<polyline fill=none stroke=#999 stroke-width=2 points=\"" +
         idle +
         "\"/></svg>"
         "<p><span style=color:#1a73e8>&#9632; MXU utilization %</span> "
         "<span style=color:#999>&#9632; Idle time %</span> over " +
         Fixed(static_cast<double>(nb) * w / 1e12, 3) + " ms of simulated time</p>\n";
}

std::string Breakdown(const profiler::StepBreakdown& b) {
  const std::pair<const char*, double> parts[] = {{"compute", b.compute_ms},
                                                  {"infeed", b.infeed_ms},
                                                  {"all_reduce", b.all_reduce_ms},
                                                  {"outfeed", b.outfeed_ms},
                                                  {"host_to_device", b.host_to_device_ms},
                                                  {"host_overhead", b.host_overhead_ms}};
  const char* colors[] = {"#1a73e8", "#e8710a", "#12b5cb", "#9334e6", "#f9ab00", "#999"};
  std::string bar = "<svg viewBox=\"0 0 600 30\" width=600 height=30>";
  std::string table = "<table id=breakdown><tr><th>part</th><th>ms per step</th></tr>";
  double x = 0;
  for (int i = 0; i < 6; ++i) {
    const double w = b.step_ms > 0 ? 600 * parts[i].second / b.step_ms : 0;
    bar += "<rect x=" + Fixed(x, 2) + " width=" + Fixed(std::max(0.0, w), 2) +
           " height=30 fill=\"" + colors[i] + "\"><title>" + parts[i].first + "</title></rect>";
    x += std::max(0.0, w);
    table += "<tr><td><span style=\"color:" + std::string(colors[i]) + "\">&#9632;</span> " +
             parts[i].first + "</td><td id=\"bd-" + parts[i].first + "\">" +
             Fixed(parts[i].second, 3) + "</td></tr>";
  }
  return bar + "</svg>" + table + "<tr><th>step</th><th>" + Fixed(b.step_ms, 3) +
         "</th></tr></table>\n";
}

}  // namespace

std::string HtmlReport(const profiler::Report& report, const profiler::Recorder& rec) {
  const profiler::Metrics& m = report.metrics;
  std::string h =
      "<!DOCTYPE html><html><head><meta charset=utf-8><title>tpusim TPU monitor</title><style>"
      "body{font-family:sans-serif;margin:20px;color:#222}.fig{display:inline-block;margin:8px "
      "16px 8px 0}.lab{font-size:12px;color:#666}.val{font-size:28px}table{border-collapse:"
      "collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{cursor:pointer}"
      "</style></head><body>\n<h1>TPU monitor: " +
      Esc(report.context.tpu_type) + ", " + std::to_string(m.per_core.size()) + " cores</h1>\n";
  h += Figure("mxu-utilization", "Utilization of TPU Matrix Units (higher is better)",
              m.mxu_utilization_percent, "%");
  h += Figure("idle-time", "TPU idle time (lower is better)", m.device_idle_time_percent, "%");
  h += Figure("duty-cycle", "Device duty cycle", m.device_duty_cycle_percent, "%");
  h += Figure("roofline", "FLOP rate vs roofline",
              m.flop_rate_utilization_relative_to_roofline_percent, "%");
  h += Figure("hbm-bw", "HBM bandwidth vs limit",
              m.memory_bw_utilization_relative_to_hw_limit_percent, "%");
  h += "<p id=step-time>Step time: " + Fixed(m.step_time_ms.avg, 3) + "ms (avg), " +
       Fixed(m.step_time_ms.min, 3) + "ms (min), " + Fixed(m.step_time_ms.max, 3) +
       "ms (max) over " + std::to_string(m.num_steps) + " steps</p>\n<h2>Over time</h2>\n";
  h += Chart(rec) + "<h2>Step-time breakdown</h2>\n" + Breakdown(m.step_breakdown);
  h += "<h2>Op profile</h2>\n<table id=ops><tr><th>op</th><th>time ms</th><th>time %</th>"
       "<th>FLOPs</th><th>bytes</th><th>FLOP/byte</th><th>bound</th><th>wasted ms</th>"
       "<th>framework op</th><th>source</th></tr>";
  for (const profiler::OpProfileEntry& o : report.ops) {
    h += "<tr><td style=text-align:left>" + Esc(o.name) + "</td><td>" + Fixed(o.time_ms, 3) +
         "</td><td>" + Fixed(o.time_percent, 1) + "</td><td>" + Fixed(o.flops, 0) + "</td><td>" +
         Fixed(o.bytes, 0) + "</td><td>" + Fixed(o.intensity, 2) + "</td><td>" +
         (o.compute_bound ? "compute" : "memory") + "</td><td>" + Fixed(o.wasted_ms, 3) +
         "</td><td style=text-align:left>" + Esc(o.framework_op) +
         "</td><td style=text-align:left>" + Esc(o.source) + "</td></tr>";
  }
  h += "</table>\n<h2>By framework op</h2>\n<table id=framework-ops><tr><th>framework op</th>"
       "<th>source</th><th>time ms</th><th>time %</th><th>HLO ops</th></tr>";
  for (const profiler::FrameworkOpEntry& f : report.framework_ops) {
    h += "<tr><td style=text-align:left>" + Esc(f.framework_op) +
         "</td><td style=text-align:left>" + Esc(f.source) + "</td><td>" + Fixed(f.time_ms, 3) +
         "</td><td>" + Fixed(f.time_percent, 1) + "</td><td>" + std::to_string(f.hlo_ops) +
         "</td></tr>";
  }
  h += "</table>\n<h2>Recommendations</h2>\n<ul id=recommendations>";
  for (const profiler::Recommendation& r : report.recommendations) {
    h += "<li data-id=\"" + Esc(r.id) + "\">" + Esc(r.text) + "</li>";
  }
  if (report.recommendations.empty()) h += "<li>No recommendations.</li>";
  // Click a column header of the op table to sort by it.
  h += "</ul>\n<script>document.querySelectorAll('#ops th').forEach((th,i)=>th.onclick=()=>{"
       "const t=th.closest('table'),rows=[...t.rows].slice(1);rows.sort((a,b)=>{const x="
       "a.cells[i].textContent,y=b.cells[i].textContent;return isNaN(x)?x.localeCompare(y):"
       "y-x});rows.forEach(r=>t.appendChild(r))});</script>\n</body></html>\n";
  return h;
}

std::string WriteHtmlReport(const profiler::Report& report, const profiler::Recorder& rec,
                            const std::string& path) {
  return WriteFileAtomic(path, HtmlReport(report, rec));
}

}  // namespace tpusim::traces
