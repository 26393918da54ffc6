// Telemetry's parsing and summary on fixed inputs: /proc/stat and /proc/loadavg text, NVML's
// clocks-event reasons and field values, counter rates, the interval from the environment, and a
// record's throttling verdict (NVML's reasons, and a low SM clock under load).
#include <cstddef>
#include <cstdlib>

#include <gtest/gtest.h>

#include "base/error.h"
#include "bench/inventory/nvml_loader.h"
#include "bench/telemetry/telemetry.h"

namespace ts {
namespace {

TEST(Telemetry, ProcStatGivesBusyAndTotalJiffies) {
  const auto a = parseProcStat("cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\n");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->total, 980u);
  EXPECT_EQ(a->busy, 980u - 800u - 20u);  // idle and iowait are not busy
  const auto b = parseProcStat("cpu  160 5 70 820 20 3 2 0 0 0\n");
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(busyFraction(*a, *b), 80.0 / 100.0);
  EXPECT_EQ(busyFraction(*b, *a), 0.0);  // time does not run backwards
  EXPECT_FALSE(parseProcStat("intr 1 2 3\n"));
  EXPECT_FALSE(parseProcStat("cpu 1 2\n"));
}

TEST(Telemetry, ProcessTicksAreUserPlusSystemTimeWhateverTheName) {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
  EXPECT_EQ(*parseProcessTicks("4242 (trainscope) R 1 4242 4242 0 -1 4194304 100 0 0 0 1234 56 0 0 20 0 3 0\n"), 1290ull);
  EXPECT_EQ(*parseProcessTicks("7 (a) b) c (d) S 1 7 7 0 -1 0 0 0 0 0 10 5 0 0\n"), 15ull);  // a name with ') ' in it
  EXPECT_FALSE(parseProcessTicks(""));
  EXPECT_FALSE(parseProcessTicks("4242 (x) R 1 2 3\n"));  // cut short
}

TEST(Telemetry, OthersBusyIsTheBusyTimeTheRunDidNotUse) {
  const CpuTimes a{100, 1000}, b{180, 1100};  // 80 of 100 jiffies busy
  EXPECT_DOUBLE_EQ(othersBusyFraction(a, b, 50), 30.0 / 100.0);
  EXPECT_DOUBLE_EQ(othersBusyFraction(a, b, 80), 0.0);
  EXPECT_DOUBLE_EQ(othersBusyFraction(a, b, 95), 0.0);  // readings a moment apart: never below 0
  EXPECT_DOUBLE_EQ(othersBusyFraction(b, a, 0), 0.0);
}

TEST(Telemetry, LoadAverageIsTheOneMinuteFigure) {
  EXPECT_DOUBLE_EQ(*parseLoadAverage("1.75 0.90 0.40 3/412 12345\n"), 1.75);
  EXPECT_FALSE(parseLoadAverage(""));
}

TEST(Telemetry, ClocksEventReasonsAreNamedAndOnlyLoadReasonsThrottle) {
  EXPECT_EQ(nvml::clocksEventReasonNames(0x1 | 0x4 | 0x40),
            (std::vector<std::string>{"gpu_idle", "sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(nvml::clocksEventReasonNames(0x1000), (std::vector<std::string>{"other"}));
  EXPECT_TRUE(nvml::throttling(0x4));
  EXPECT_TRUE(nvml::throttling(0x80));
  EXPECT_FALSE(nvml::throttling(0x1 | 0x2 | 0x10 | 0x100));  // idle, application clocks, sync boost, display
  EXPECT_FALSE(nvml::throttling(0));
}

TEST(Telemetry, FieldValuesAreReadAsCountersByTheirType) {
  EXPECT_EQ(offsetof(nvml::FieldValue, valueType), 24u);  // nvmlFieldValue_t's layout
  EXPECT_EQ(offsetof(nvml::FieldValue, value), 32u);
  nvml::FieldValue v{};
  v.valueType = 3;
  v.value.ull = 123456789012345ull;
  EXPECT_EQ(nvml::counterValue(v), 123456789012345ull);
  v.valueType = 1;
  v.value.ull = 0;
  v.value.ui = 42;
  EXPECT_EQ(nvml::counterValue(v), 42ull);
  v.valueType = 4;
  v.value.sll = -1;
  EXPECT_FALSE(nvml::counterValue(v));  // a negative counter is no counter
  v.value.sll = 7;
  EXPECT_EQ(nvml::counterValue(v), 7ull);
  v.valueType = 0;
  v.value.d = 1.5;
  EXPECT_FALSE(nvml::counterValue(v));  // a double is not a counter
  v.valueType = 3;
  v.value.ull = 9;
  v.nvmlReturn = 3;  // NVML_ERROR_NOT_SUPPORTED: a GPU without NVLink
  EXPECT_FALSE(nvml::counterValue(v));
}

TEST(Telemetry, CounterRatesAreGigabytesPerSecondAndNeverBackwards) {
  EXPECT_DOUBLE_EQ(*counterRateGBps(1000, 1000 + 1'000'000, 0.5), 1'000'000 * 1024.0 / 0.5 / 1e9);
  EXPECT_DOUBLE_EQ(*counterRateGBps(5, 5, 0.2), 0.0);
  EXPECT_FALSE(counterRateGBps(2000, 1000, 0.2));  // the driver reloaded: the counter restarted
  EXPECT_FALSE(counterRateGBps(1000, 2000, 0.0));
}

TEST(Telemetry, ALowClockCountsOnlyWhenTheGpuIsBusy) {
  const auto g = [](nlohmann::json sm, nlohmann::json util) {
    return nlohmann::json{{"sm_clock_mhz", sm}, {"gpu_util_percent", util}};
  };
  EXPECT_TRUE(lowClockUnderLoad(g(1400, 95), 1980));
  EXPECT_FALSE(lowClockUnderLoad(g(1755, 95), 1980));     // 89% of the maximum: boost varies that much
  EXPECT_FALSE(lowClockUnderLoad(g(210, 0), 1980));       // idle GPUs lower their clocks
  EXPECT_FALSE(lowClockUnderLoad(g(1400, 95), nullptr));  // no maximum known: no verdict
  EXPECT_FALSE(lowClockUnderLoad(g(nullptr, 95), 1980));
  EXPECT_FALSE(lowClockUnderLoad(g(1400, nullptr), 1980));
}

TEST(Telemetry, IntervalComesFromTheEnvironment) {
  ::unsetenv("TRAINSCOPE_TELEMETRY_MS");
  EXPECT_DOUBLE_EQ(telemetryIntervalFromEnvironment(), 0.2);
  ::setenv("TRAINSCOPE_TELEMETRY_MS", "50", 1);
  EXPECT_DOUBLE_EQ(telemetryIntervalFromEnvironment(), 0.05);
  ::setenv("TRAINSCOPE_TELEMETRY_MS", "0", 1);
  EXPECT_DOUBLE_EQ(telemetryIntervalFromEnvironment(), 0.0);
  for (const char* bad : {"fast", "-5", "10ms"}) {
    ::setenv("TRAINSCOPE_TELEMETRY_MS", bad, 1);
    EXPECT_THROW(telemetryIntervalFromEnvironment(), UsageError) << bad;
  }
  ::unsetenv("TRAINSCOPE_TELEMETRY_MS");
}

nlohmann::json gpuSample(double sm, bool throttled, nlohmann::json reasons) {
  return {{"index", 0},
          {"sm_clock_mhz", sm},
          {"mem_clock_mhz", 2619},
          {"power_w", 650.5},
          {"temperature_c", 71},
          {"gpu_util_percent", 99},
          {"mem_util_percent", 40},
          {"throttle_reasons", reasons},
          {"throttled", throttled},
          {"pcie_tx_gbps", nullptr},
          {"pcie_rx_gbps", nullptr}};
}

TEST(Telemetry, TheRecordSaysWhetherAndWhyTheClocksThrottled) {
  nlohmann::json sampled = {{"interval_s", 0.2}, {"gpu_max_sm_clock_mhz", {1980}}, {"samples", nlohmann::json::array()}};
  const double sm[] = {1980, 1755, 1410, 1980};
  for (int i = 0; i < 4; ++i) {
    const bool t = i == 1 || i == 2;
    sampled["samples"].push_back(
        {{"t_s", 0.2 * i},
         {"cpu_busy_fraction", i == 0 ? nlohmann::json() : nlohmann::json(0.25 * i)},
         {"load1", 2.0},
         {"cpu_freq_mhz", nullptr},
         {"gpus", {gpuSample(sm[i], t, t ? nlohmann::json({"gpu_idle", "sw_power_cap"}) : nlohmann::json::array())}}});
  }
  const nlohmann::json rec = telemetryRecord("node7", 4, sampled);
  EXPECT_EQ(rec["kind"], "telemetry");
  EXPECT_EQ(rec["host"], "node7");
  const auto& s = rec["summary"];
  EXPECT_TRUE(s["throttled"].get<bool>());
  EXPECT_DOUBLE_EQ(s["duration_s"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(s["cpu_busy_fraction"]["min"].get<double>(), 0.25);  // the first sample has no interval behind it
  EXPECT_DOUBLE_EQ(s["cpu_busy_fraction"]["max"].get<double>(), 0.75);
  EXPECT_TRUE(s["cpu_freq_mhz"].is_null());
  const auto& g = s["gpus"][0];
  EXPECT_EQ(g["throttled_samples"], 2);
  EXPECT_EQ(g["low_clock_samples"], 1);  // 1410 MHz at 99% busy; 1755 is within 85% of 1980
  EXPECT_EQ(g["throttle_reasons"], nlohmann::json({"sw_power_cap"}));
  EXPECT_DOUBLE_EQ(g["sm_clock_mhz"]["min"].get<double>(), 1410);
  EXPECT_DOUBLE_EQ(g["max_sm_clock_mhz"].get<double>(), 1980);
  EXPECT_DOUBLE_EQ(g["mem_clock_mhz"]["median"].get<double>(), 2619);

  // No reason from NVML, but the clock sank while busy: still throttled.
  for (auto& x : sampled["samples"]) x["gpus"][0]["throttled"] = false;
  const nlohmann::json quiet = telemetryRecord("node7", 4, sampled);
  EXPECT_EQ(quiet["summary"]["gpus"][0]["throttled_samples"], 0);
  EXPECT_TRUE(quiet["summary"]["throttled"].get<bool>());
  // Neither: not throttled.
  sampled["samples"][2]["gpus"][0]["sm_clock_mhz"] = 1900;
  EXPECT_FALSE(telemetryRecord("node7", 4, sampled)["summary"]["throttled"].get<bool>());
}

}  // namespace
}  // namespace ts
