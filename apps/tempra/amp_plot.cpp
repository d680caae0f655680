// apps/tempra/amp_plot.cpp
#include "amp_plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "tempra/core/error.h"

namespace tempra::app {
namespace {

constexpr int kWidth = 1200, kHeight = 860;
constexpr double kExcerptSeconds = 0.02;

struct Box {
  double x, y, w, h;
};

struct Colour {
  double r, g, b;
};
constexpr Colour kTarget{0.1, 0.1, 0.1}, kPrediction{0.9, 0.45, 0.05}, kTrain{0.25, 0.45, 0.8};

void text(cairo_t* cr, double x, double y, const std::string& s, double size, bool centred = false) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, centred ? x - e.width / 2 - e.x_bearing : x, y);
  cairo_show_text(cr, s.c_str());
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// A frame with y ticks at `ticks` (value, label) and x ticks likewise; maps data to the box.
void frame(cairo_t* cr, const Box& box, const std::vector<std::pair<double, std::string>>& x_ticks,
           const std::vector<std::pair<double, std::string>>& y_ticks, const std::string& x_label,
           const std::string& y_label) {
  cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
  cairo_set_line_width(cr, 1);
  for (const auto& [v, label] : y_ticks) {
    cairo_move_to(cr, box.x, box.y + box.h * (1 - v));
    cairo_line_to(cr, box.x + box.w, box.y + box.h * (1 - v));
  }
  for (const auto& [v, label] : x_ticks) {
    cairo_move_to(cr, box.x + box.w * v, box.y);
    cairo_line_to(cr, box.x + box.w * v, box.y + box.h);
  }
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, box.x, box.y, box.w, box.h);
  cairo_stroke(cr);
  for (const auto& [v, label] : y_ticks) text(cr, box.x - 64, box.y + box.h * (1 - v) + 5, label, 13);
  for (const auto& [v, label] : x_ticks) text(cr, box.x + box.w * v, box.y + box.h + 18, label, 13, true);
  text(cr, box.x + box.w / 2, box.y + box.h + 40, x_label, 14, true);
  cairo_save(cr);
  cairo_move_to(cr, box.x - 74, box.y + box.h / 2);
  cairo_rotate(cr, -M_PI / 2);
  cairo_set_font_size(cr, 14);
  cairo_text_extents_t e;
  cairo_text_extents(cr, y_label.c_str(), &e);
  cairo_rel_move_to(cr, -e.width / 2, 0);
  cairo_show_text(cr, y_label.c_str());
  cairo_restore(cr);
}

// A polyline of (x, y) in [0, 1]^2 (y up), clipped to the box.
void curve(cairo_t* cr, const Box& box, const std::vector<std::pair<double, double>>& points, Colour c, double width,
           bool dashed = false) {
  if (points.empty()) return;
  cairo_save(cr);
  cairo_rectangle(cr, box.x, box.y, box.w, box.h);
  cairo_clip(cr);
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
  cairo_set_line_width(cr, width);
  const double dash[] = {6, 4};
  cairo_set_dash(cr, dash, dashed ? 2 : 0, 0);
  for (size_t i = 0; i < points.size(); ++i) {
    const double x = box.x + box.w * points[i].first, y = box.y + box.h * (1 - points[i].second);
    if (i == 0)
      cairo_move_to(cr, x, y);
    else
      cairo_line_to(cr, x, y);
  }
  if (points.size() == 1)
    cairo_arc(cr, box.x + box.w * points[0].first, box.y + box.h * (1 - points[0].second), 3, 0, 7);
  cairo_stroke(cr);
  cairo_restore(cr);
}

void legend(cairo_t* cr, double x, double y, const std::vector<std::pair<std::string, Colour>>& entries) {
  for (const auto& [label, c] : entries) {
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_set_line_width(cr, 3);
    cairo_move_to(cr, x, y - 5);
    cairo_line_to(cr, x + 28, y - 5);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, x + 36, y, label, 14);
    y += 20;
  }
}

void waveform_panel(cairo_t* cr, const Box& box, const AmpPlot& plot) {
  const auto n = int64_t(plot.target.size());
  const int64_t window = std::min<int64_t>(n, std::max<int64_t>(2, std::llround(kExcerptSeconds * plot.sample_rate)));
  // The window where the model errs most (stepping by a quarter of one): the picture shows
  // the worst of the fit, not its best.
  int64_t start = 0;
  double best = -1;
  for (int64_t s = 0; s + window <= n; s += std::max<int64_t>(1, window / 4)) {
    double e = 0;
    for (int64_t t = s; t < s + window; ++t) {
      const double d = double(plot.prediction[size_t(t)]) - plot.target[size_t(t)];
      e += d * d;
    }
    if (e > best) best = e, start = s;
  }
  double peak = 1e-6;
  for (int64_t t = start; t < start + window; ++t)
    peak = std::max({peak, double(std::fabs(plot.target[size_t(t)])), double(std::fabs(plot.prediction[size_t(t)]))});
  peak *= 1.1;
  std::vector<std::pair<double, double>> target, prediction;
  for (int64_t t = start; t < start + window; ++t) {
    const double x = double(t - start) / double(window - 1);
    target.emplace_back(x, 0.5 + 0.5 * plot.target[size_t(t)] / peak);
    prediction.emplace_back(x, 0.5 + 0.5 * plot.prediction[size_t(t)] / peak);
  }
  const double ms0 = 1000.0 * double(start) / plot.sample_rate, ms = 1000.0 * double(window) / plot.sample_rate;
  std::vector<std::pair<double, std::string>> xt, yt;
  for (int i = 0; i <= 4; ++i) xt.emplace_back(i / 4.0, format("%.1f", ms0 + ms * i / 4.0));
  for (int i = 0; i <= 4; ++i) yt.emplace_back(i / 4.0, format("%+.2f", peak * (i / 2.0 - 1)));
  frame(cr, box, xt, yt, "time in the validation split (ms)", "amplitude");
  curve(cr, box, target, kTarget, 2.0);
  curve(cr, box, prediction, kPrediction, 2.0, true);
  legend(cr, box.x + 12, box.y + 22, {{"target (the amp)", kTarget}, {"prediction (the model)", kPrediction}});
}

void esr_panel(cairo_t* cr, const Box& box, const AmpPlot& plot) {
  const size_t epochs = std::max(plot.train_esr.size(), plot.validation_esr.size());
  double lo = 1e300, hi = 0;
  for (const auto* series : {&plot.train_esr, &plot.validation_esr})
    for (double v : *series)
      if (v > 0 && std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (hi <= 0) lo = 1e-3, hi = 1;
  const double top = std::ceil(std::log10(hi)), bottom = std::min(top - 1, std::floor(std::log10(lo)));
  auto y_of = [&](double v) { return (std::log10(std::max(v, 1e-30)) - bottom) / (top - bottom); };
  auto x_of = [&](size_t i) { return epochs > 1 ? double(i) / double(epochs - 1) : 0.5; };
  std::vector<std::pair<double, std::string>> xt, yt;
  for (int i = 0; i <= 4; ++i) {  // whole epochs, at most five, none twice
    const auto e = size_t(std::llround(double(epochs > 1 ? epochs - 1 : 0) * i / 4.0));
    if (!xt.empty() && format("%.0f", double(e + 1)) == xt.back().second) continue;
    xt.emplace_back(x_of(e), format("%.0f", double(e + 1)));
  }
  for (double d = bottom; d <= top + 1e-9; d += 1)
    yt.emplace_back((d - bottom) / (top - bottom), format("%g", std::pow(10, d)));
  frame(cr, box, xt, yt, "epoch", "ESR (log scale)");
  for (const auto& [series, colour] :
       {std::pair{&plot.train_esr, kTrain}, std::pair{&plot.validation_esr, kPrediction}}) {
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < series->size(); ++i) points.emplace_back(x_of(i), y_of((*series)[i]));
    curve(cr, box, points, colour, 2.0);
  }
  legend(cr, box.x + box.w - 230, box.y + 22, {{"training (mean of steps)", kTrain}, {"validation", kPrediction}});
}

cairo_status_t append_to_string(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

std::string render_amp_plot(const AmpPlot& plot) {
  check(plot.target.size() == plot.prediction.size() && plot.target.size() >= 2, "amp plot",
        "the target and prediction must have the same length, at least 2");
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, kWidth, kHeight), cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> context(cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, kWidth / 2.0, 32, plot.title, 20, true);
  waveform_panel(cr, {100, 60, kWidth - 140.0, 340}, plot);
  esr_panel(cr, {100, 470, kWidth - 140.0, 320}, plot);
  check(cairo_status(cr) == CAIRO_STATUS_SUCCESS, "amp plot",
        "drawing failed: ", cairo_status_to_string(cairo_status(cr)));
  std::string png;
  const cairo_status_t s = cairo_surface_write_to_png_stream(surface.get(), append_to_string, &png);
  check(s == CAIRO_STATUS_SUCCESS, "amp plot", "encoding the PNG failed: ", cairo_status_to_string(s));
  return png;
}

}  // namespace tempra::app
