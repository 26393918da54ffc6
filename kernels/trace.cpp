#include "kernels/trace.h"

#include <chrono>

namespace ts::trace {
namespace {
bool g_on = false;
std::vector<Event> g_events;
}  // namespace

bool enabled() { return g_on; }
void enable(bool on) { g_on = on; }

double nowUs() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void record(std::string name, std::string category, double startUs, double endUs, Track track, nlohmann::json args) {
  if (!g_on) return;
  g_events.push_back({std::move(name), std::move(category), startUs, endUs - startUs, track, std::move(args)});
}

std::vector<Event> take() {
  std::vector<Event> out;
  out.swap(g_events);
  return out;
}

Span::Span(const char* name, const char* category, int index) : on_(g_on), name_(name), category_(category), index_(index) {
  if (on_) start_ = nowUs();
}

Span::~Span() {
  if (!on_) return;
  record(index_ >= 0 ? std::string(name_) + " " + std::to_string(index_) : std::string(name_), category_, start_, nowUs());
}

}  // namespace ts::trace
