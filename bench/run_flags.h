#pragma once
// The flags every measuring subcommand shares, declared once: -w/--warmup, -n/--iters, --trials, --timeout,
// --json, --label, --trace; the counts with their ranges (a warm-up of 0 or more, at least 1 iteration and trial). Each reaches
// its field through `holder` (TS_FIELD of the struct that holds it) under one conventional name there (warmup, iters, trials,
// timeoutS, jsonPath, label, traceDir); the defaults are the holder's, so each subcommand keeps its own.
#include <string>

#include "bench/option_table.h"

namespace ts {

// Why the counts of the untimed and the timed iterations are no part of a record's identity.
inline constexpr const char* kUntimed = "the untimed start: the timed part measures the same";
inline constexpr const char* kSampleCount = "how many samples of the same measurement are taken";

template <class Opts, class Holder>
OptionDecl<Opts>& addWarmupFlag(OptionTable<Opts>& t, Holder holder,
                                std::string help = "Untimed iterations before the timed ones") {
  return t
      .add(
          "-w,--warmup", std::move(help), [holder](auto& o) -> auto& { return holder(o).warmup; })
      .range({0, kMaxCount})
      .notInIdentity(kUntimed);
}

template <class Opts, class Holder>
OptionDecl<Opts>& addItersFlag(OptionTable<Opts>& t, Holder holder, std::string help = "Timed iterations per trial") {
  return t
      .add(
          "-n,--iters", std::move(help), [holder](auto& o) -> auto& { return holder(o).iters; })
      .range({1, kMaxCount})
      .notInIdentity(kSampleCount);
}

template <class Opts, class Holder>
OptionDecl<Opts>& addTrialsFlag(OptionTable<Opts>& t, Holder holder) {
  return t
      .add(
          "--trials", "Trials of --iters iterations", [holder](auto& o) -> auto& { return holder(o).trials; })
      .range({1, kMaxCount})
      .notInIdentity(kSampleCount);
}

template <class Opts, class Holder>
OptionDecl<Opts>& addTimeoutFlag(OptionTable<Opts>& t, Holder holder) {
  OptionDecl<Opts>& timeout = t.add(
      "--timeout",
      "Seconds without progress before every process is stopped (0 = never; a process waiting for its peers waits longer, "
      "docs/reliability.md)",
      [holder](auto& o) -> auto& { return holder(o).timeoutS; });
  return timeout
      .range({0, 1e6})  // about 11 days without progress
      .notInIdentity("how long a stuck run is waited for: a run that ends measured the same");
}

// --json and --label; a suite step has no --json of its own (the suite writes one document: suite --json). Returns --json's.
template <class Opts, class Holder>
OptionDecl<Opts>& addOutputFlags(OptionTable<Opts>& t, Holder holder) {
  OptionDecl<Opts>& json = t.add(
      "--json", "Write the result document here; records stream to the .jsonl beside it", [holder](auto& o) -> auto& {
        return holder(o).jsonPath;
      });
  json.commandLineOnly("a suite writes one result document for all its steps (trainscope suite --json)")
      .notRecorded("the output path: the record is in the document it names");
  t.add(
       "--label",
       "A label for this run, carried into every record and the reports", [holder](auto& o) -> auto& { return holder(o).label; })
      .notInIdentity("a name for the run: a baseline and its candidate are labelled apart");
  return json;
}

// --trace DIR; the help says which spans this subcommand writes.
template <class Opts, class Holder>
OptionDecl<Opts>& addTraceFlag(OptionTable<Opts>& t, Holder holder, std::string help) {
  return t
      .add(
          "--trace", std::move(help), [holder](auto& o) -> auto& { return holder(o).traceDir; })
      .notInIdentity("where the spans go, a path of its run's own; what tracing costs shows in the figures compared");
}

}  // namespace ts
