#pragma once
// The worker protocol's limits, written once for both sides (docs/protocol.md "Framing and
// limits"). Plain C++, no Qt: the worker (src/worker/protocol/protocol.cpp's request check and line reader,
// src/worker/answers/candidateparser.h's answer limit) includes this header as core does (the codec,
// the model client, the CLI's and the Launch page's trial bounds through triallimits.h), as both
// include core/workers/hostlimitdefaults.h. Change a limit here and both sides follow; the
// golden files and tst_worker_protocol check the worker's messages with these numbers.

#include <cstdint>

namespace kwb {

/// An inclusive range of a count a request may carry.
struct CountRange
{
    int min = 0;
    int max = 0;
    constexpr bool contains(int value) const { return value >= min && value <= max; }
};

/// The bounds of an evaluation's trial counts (evaluate's correctness_trials, timing_trials and
/// warmup; profile's trials). The CLI refuses counts outside them with a plain message before
/// anything starts, and the worker refuses them as bad_request with the same numbers. The upper
/// bounds keep one evaluation within its wall-clock limit on any task (a timing trial of a large
/// L3 task takes tens of milliseconds) and its memory bounded (one set of outputs per trial).
namespace TrialLimits {
inline constexpr CountRange Correctness{1, 100};
inline constexpr CountRange Timing{1, 10000};
inline constexpr CountRange Warmup{0, 1000};
/// `profile`'s CUPTI trials (`trials`).
inline constexpr CountRange Profile{1, 1000};
} // namespace TrialLimits

namespace ProtocolLimits {
/// The largest line either side may write, the terminating '\n' included (16 MiB): a longer
/// request is answered line_too_long, a longer response has its strings cut.
inline constexpr std::int64_t kMaxLineBytes = std::int64_t(16) << 20;
/// The longest candidate answer, in UTF-8 bytes (1 MiB; docs/candidate-format.md): the worker
/// refuses a longer one as too_large, and the model client refuses it before it is stored.
inline constexpr std::int64_t kMaxAnswerBytes = std::int64_t(1) << 20;
} // namespace ProtocolLimits

} // namespace kwb
