// The CUDA-free half of the launch timer (launch_timer.cpp): what a recorded
// launch holds, how launches group into segments, the statistics kept per
// segment and the JSON report. Plain C++17 so it can be tested with g++ alone.
//
// A segment is the list of launches a program issues between two points where
// the host waits for the device or touches device memory outside a kernel.
// Segments are numbered by that point: the index of a segment is the ordinal
// of the call that ended it (0 for the first such call), counting calls that
// ended an empty segment too; empty segments are not reported.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sirius_timer {

// The runtime entry point the program launched through. A replay goes through
// the same entry point, so a cooperative launch stays cooperative and launch
// attributes are kept.
enum class LaunchEntry {
    KernelHandle,  // __cudaLaunchKernel(cudaKernel_t, ...): what <<<>>> compiles to
    Function,      // cudaLaunchKernel(const void* host function, ...)
    Cooperative,   // cudaLaunchCooperativeKernel
    Extended,      // cudaLaunchKernelExC, with launch attributes
};

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

struct LaunchRecord {
    std::uintptr_t kernel = 0;  // the cudaKernel_t or host function the program passed
    std::string name;
    LaunchEntry entry = LaunchEntry::KernelHandle;
    Dim3 grid, block;
    std::size_t shared_bytes = 0;
    std::uintptr_t stream = 0;  // the program's stream, only to count distinct streams
    int device = 0;
    // A copy of each argument's bytes, taken at launch time: the program's
    // argument array points into its stack, which is gone by the replay.
    std::vector<std::vector<unsigned char>> arguments;
    // The cudaLaunchAttribute array of an Extended launch, as bytes; the
    // launch timer interprets them.
    std::vector<unsigned char> launch_attributes;
    // Why this launch cannot be replayed; empty when it can.
    std::string unreplayable;

    bool cooperative() const { return entry == LaunchEntry::Cooperative; }
};

// Timed repetitions of one replay mode, in microseconds.
struct Timing {
    std::vector<double> samples_us;

    double median() const {
        if (samples_us.empty()) return 0.0;
        std::vector<double> sorted = samples_us;
        std::sort(sorted.begin(), sorted.end());
        std::size_t middle = sorted.size() / 2;
        if (sorted.size() % 2 == 1) return sorted[middle];
        return (sorted[middle - 1] + sorted[middle]) / 2.0;
    }

    double minimum() const {
        if (samples_us.empty()) return 0.0;
        return *std::min_element(samples_us.begin(), samples_us.end());
    }
};

// What the report keeps of a segment once it has been replayed; the launch
// records themselves are dropped then, so long programs do not accumulate them.
struct Segment {
    int index = 0;
    std::string ended_by;
    int launches = 0;
    int streams = 0;
    std::vector<std::pair<std::string, int>> kernels;  // name, count; in first-launch order
    bool replayed = false;
    std::optional<std::string> reason;  // why not replayed, or what part of the replay failed
    std::optional<Timing> direct;
    std::optional<Timing> graph;
};

inline Segment summarize(int index, const std::string& ended_by,
                         const std::vector<LaunchRecord>& launches) {
    Segment segment;
    segment.index = index;
    segment.ended_by = ended_by;
    segment.launches = static_cast<int>(launches.size());
    std::vector<std::uintptr_t> streams;
    for (const LaunchRecord& launch : launches) {
        if (std::find(streams.begin(), streams.end(), launch.stream) == streams.end())
            streams.push_back(launch.stream);
        auto same_name = [&](const auto& kernel) { return kernel.first == launch.name; };
        auto counted = std::find_if(segment.kernels.begin(), segment.kernels.end(), same_name);
        if (counted == segment.kernels.end())
            segment.kernels.emplace_back(launch.name, 1);
        else
            ++counted->second;
    }
    segment.streams = static_cast<int>(streams.size());
    return segment;
}

// The first reason a launch of `launches` cannot be replayed, if any.
inline std::optional<std::string> why_not_replayable(const std::vector<LaunchRecord>& launches) {
    for (const LaunchRecord& launch : launches)
        if (!launch.unreplayable.empty())
            return "kernel " + launch.name + ": " + launch.unreplayable;
    return std::nullopt;
}

// A segment just ended: its summary, to be completed by the replay, and the
// launches to replay.
struct ClosedSegment {
    Segment summary;
    std::vector<LaunchRecord> launches;
};

// Launches since the last segment end, and the segments reported so far.
class Recorder {
  public:
    void record(LaunchRecord launch) { pending_.push_back(std::move(launch)); }

    bool has_pending() const { return !pending_.empty(); }

    // Ends the current segment at the call `ended_by`; nothing when the
    // segment has no launches.
    std::optional<ClosedSegment> close(const std::string& ended_by) {
        int index = boundaries_++;
        if (pending_.empty()) return std::nullopt;
        ClosedSegment closed{summarize(index, ended_by, pending_), std::move(pending_)};
        pending_.clear();
        return closed;
    }

    // Adds a replayed (or skipped) segment to the report.
    void keep(Segment segment) { segments_.push_back(std::move(segment)); }

    const std::vector<Segment>& segments() const { return segments_; }

  private:
    std::vector<LaunchRecord> pending_;
    std::vector<Segment> segments_;
    int boundaries_ = 0;
};

struct DeviceInfo {
    std::string name;
    int sm_count = 0;
    int driver = 0;   // cudaDriverGetVersion
    int runtime = 0;  // cudaRuntimeGetVersion
    std::string compute_capability;  // "9.0"
};

struct Report {
    DeviceInfo device;
    int reps = 0;
    int warmup = 0;
    std::vector<Segment> segments;
};

// ---- JSON ------------------------------------------------------------------
// Written by hand, not with printf or streams: both follow the program's
// locale, which may print "1,5" or group digits.

// `text` as a JSON string literal. Bytes of 0x80 and above pass through, so
// UTF-8 names stay readable.
inline std::string json_string(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
                    out += escaped;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

// Microseconds with nanosecond resolution, which is finer than CUDA events.
inline std::string json_number(double value) {
    if (!(value == value) || value > 1e300 || value < -1e300) return "0.000";  // not JSON otherwise
    char text[64];
    auto result = std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, 3);
    return std::string(text, result.ptr);
}

inline std::string json_timing(const std::optional<Timing>& timing) {
    if (!timing) return "null";
    std::string out = "{\"median\": " + json_number(timing->median()) +
                      ", \"min\": " + json_number(timing->minimum()) + ", \"samples\": [";
    for (std::size_t i = 0; i < timing->samples_us.size(); ++i) {
        if (i) out += ", ";
        out += json_number(timing->samples_us[i]);
    }
    return out + "]}";
}

// The sum of the medians of the segments timed in one mode.
inline double total_us(const Report& report, std::optional<Timing> Segment::*mode) {
    double total = 0.0;
    for (const Segment& segment : report.segments)
        if (segment.*mode) total += (segment.*mode)->median();
    return total;
}

inline std::string to_json(const Report& report) {
    const DeviceInfo& device = report.device;
    std::string out = "{\"harness\": 1,\n \"device\": {\"name\": " + json_string(device.name) +
                      ", \"sm_count\": " + std::to_string(device.sm_count) +
                      ", \"driver\": " + std::to_string(device.driver) +
                      ", \"runtime\": " + std::to_string(device.runtime) +
                      ", \"cc\": " + json_string(device.compute_capability) + "},\n" +
                      " \"reps\": " + std::to_string(report.reps) +
                      ", \"warmup\": " + std::to_string(report.warmup) + ",\n \"segments\": [";
    long total_launches = 0;
    for (std::size_t i = 0; i < report.segments.size(); ++i) {
        const Segment& segment = report.segments[i];
        total_launches += segment.launches;
        out += i ? ",\n  " : "\n  ";
        out += "{\"index\": " + std::to_string(segment.index) +
               ", \"ended_by\": " + json_string(segment.ended_by) +
               ", \"launches\": " + std::to_string(segment.launches) +
               ", \"streams\": " + std::to_string(segment.streams) + ", \"kernels\": {";
        for (std::size_t k = 0; k < segment.kernels.size(); ++k) {
            if (k) out += ", ";
            out += json_string(segment.kernels[k].first) + ": " +
                   std::to_string(segment.kernels[k].second);
        }
        out += "}, \"replayed\": ";
        out += segment.replayed ? "true" : "false";
        out += ", \"reason\": " + (segment.reason ? json_string(*segment.reason) : "null");
        out += ",\n   \"direct_us\": " + json_timing(segment.direct);
        out += ",\n   \"graph_us\": " + json_timing(segment.graph) + "}";
    }
    out += "],\n \"total\": {\"launches\": " + std::to_string(total_launches) +
           ", \"direct_us\": " + json_number(total_us(report, &Segment::direct)) +
           ", \"graph_us\": " + json_number(total_us(report, &Segment::graph)) + "}}\n";
    return out;
}

// Writes the report to `path` through a temporary file renamed into place, so
// a reader never sees half a report. False when it cannot be written.
inline bool write_report(const std::string& path, const Report& report) {
    std::string json = to_json(report);
    std::string partial = path + ".partial";
    std::FILE* file = std::fopen(partial.c_str(), "wb");
    if (!file) return false;
    bool written = std::fwrite(json.data(), 1, json.size(), file) == json.size();
    written = std::fclose(file) == 0 && written;
    if (!written || std::rename(partial.c_str(), path.c_str()) != 0) {
        std::remove(partial.c_str());
        return false;
    }
    return true;
}

}  // namespace sirius_timer
