#pragma once
// The bounds of an evaluation's trial counts (evaluate's correctness_trials, timing_trials and
// warmup, docs/protocol.md), defined once for every client: the CLI refuses counts outside them
// with a plain message before anything starts, and the worker refuses them as bad_request with
// the same numbers. The upper bounds keep one evaluation within its wall-clock limit on any task
// (a timing trial of a large L3 task takes tens of milliseconds).

#include <QString>

namespace kwb {

struct CountRange
{
    int min = 0;
    int max = 0;
    constexpr bool contains(int value) const { return value >= min && value <= max; }
};

namespace TrialLimits {
inline constexpr CountRange Correctness{1, 100};
inline constexpr CountRange Timing{1, 10000};
inline constexpr CountRange Warmup{0, 1000};
} // namespace TrialLimits

/// "--trials must be between 1 and 10000, got 0", or an empty string when `value` is in range.
inline QString countRangeError(const QString& name, int value, CountRange range)
{
    if (range.contains(value))
        return QString();
    return QStringLiteral("%1 must be between %2 and %3, got %4").arg(name).arg(range.min).arg(range.max).arg(value);
}

} // namespace kwb
