// Drives timing_core.h without CUDA: records launches with given parameter
// sizes, ends segments, gives them made-up timings and writes the report to
// argv[1]. Prints the argument bytes each closed segment holds.

#include <cstdio>

#include "timing_core.h"

using namespace sirius_timer;

static LaunchRecord launch(const char* name, std::uintptr_t stream,
                           std::vector<std::size_t> sizes) {
    LaunchRecord record;
    record.name = name;
    record.stream = stream;
    for (std::size_t size : sizes)
        record.arguments.emplace_back(size, static_cast<unsigned char>(size));
    return record;
}

// "segment INDEX: SIZES | SIZES ...", the argument sizes of each launch.
static void print_arguments(const ClosedSegment& segment) {
    std::printf("segment %d:", segment.summary.index);
    for (std::size_t i = 0; i < segment.launches.size(); ++i) {
        if (i) std::printf(" |");
        for (const auto& argument : segment.launches[i].arguments)
            std::printf(" %zu", argument.size());
    }
    std::printf("\n");
}

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    Recorder recorder;
    if (recorder.close("cudaMemcpy")) return 3;  // nothing launched: no segment

    recorder.record(launch("k1", 0, {8, 4}));
    recorder.record(launch("k\"quoted\"\\name\n", 16, {8}));
    recorder.record(launch("k1", 16, {8, 4}));
    auto first = recorder.close("cudaDeviceSynchronize");
    if (!first || recorder.has_pending()) return 4;
    print_arguments(*first);
    first->summary.replayed = true;
    first->summary.direct = Timing{{5.0, 1.0, 3.0, 7.0}};
    first->summary.graph = Timing{{4.0, 2.0, 2.0, 8.0}};
    recorder.keep(first->summary);

    LaunchRecord broken = launch("tab\tname", 0, {});
    broken.unreplayable = "parameters unknown \x01";
    recorder.record(broken);
    auto second = recorder.close("exit");
    print_arguments(*second);
    second->summary.reason = why_not_replayable(second->launches);
    recorder.keep(second->summary);

    Report report;
    report.device = {"Test \"GPU\" \x01", 4, 13000, 13000, "9.0"};
    report.reps = 4;
    report.warmup = 1;
    report.segments = recorder.segments();
    return write_report(argv[1], report) ? 0 : 5;
}
