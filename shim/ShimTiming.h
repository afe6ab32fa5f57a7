//===- ShimTiming.h - The first call of a shim entry point ------*- C++ -*-===//
//
// Part of the kdl project, under the Apache License v2.0 with LLVM Exceptions.
// See https://llvm.org/LICENSE.txt for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// With KDL_SHIM_TIMING set, the shim times the steps of the first call of an
// entry point and prints them when the process exits, so that the printing is
// not inside the call being timed:
//
//   kdl: timing ENTRY STEP=NS STEP=NS ...
//
//===----------------------------------------------------------------------===//

#ifndef KDL_SHIM_SHIMTIMING_H
#define KDL_SHIM_SHIMTIMING_H

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace kdl {
namespace shim {

class FirstCallTiming {
public:
  using Clock = std::chrono::steady_clock;

  explicit FirstCallTiming(const char *Entry) : Entry(Entry) {}
  ~FirstCallTiming() {
    if (!Recorded)
      return;
    std::fprintf(stderr, "kdl: timing %s", Entry);
    for (const auto &[Step, Value] : Steps)
      std::fprintf(stderr, " %s=%lld", Step, Value);
    std::fprintf(stderr, "\n");
  }

  /// True while the first call is being timed.
  bool wanted() const { return Enabled && !Recorded; }
  /// The time now, read only while the first call is being timed: an
  /// untimed call never reads the clock.
  Clock::time_point start() const {
    return wanted() ? Clock::now() : Clock::time_point();
  }
  /// Records the nanoseconds since \p Start (from start()) as \p Step.
  void since(const char *Step, Clock::time_point Start) {
    if (!wanted())
      return;
    set(Step, std::chrono::duration_cast<std::chrono::nanoseconds>(
                  Clock::now() - Start)
                  .count());
  }
  void set(const char *Step, long long Value) {
    if (!wanted())
      return;
    for (auto &[Name, Old] : Steps)
      if (std::strcmp(Name, Step) == 0) {
        Old = Value;
        return;
      }
    Steps.emplace_back(Step, Value);
  }
  /// Ends the first call: later calls are not timed.
  void done() { Recorded = Enabled; }

private:
  const char *Entry;
  bool Enabled = std::getenv("KDL_SHIM_TIMING") != nullptr;
  bool Recorded = false;
  std::vector<std::pair<const char *, long long>> Steps;
};

} // namespace shim
} // namespace kdl

#endif // KDL_SHIM_SHIMTIMING_H
