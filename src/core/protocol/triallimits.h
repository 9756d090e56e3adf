#pragma once
// The bounds of an evaluation's trial counts for Qt clients: the numbers are
// core/protocol/protocollimits.h's (TrialLimits, shared with the worker, which refuses counts
// outside them as bad_request with the same numbers); this adds the CLI's message.

#include "core/protocol/protocollimits.h"

#include <QString>

namespace kwb {

/// "--trials must be between 1 and 10000, got 0", or an empty string when `value` is in range.
inline QString countRangeError(const QString& name, int value, CountRange range)
{
    if (range.contains(value))
        return QString();
    return QStringLiteral("%1 must be between %2 and %3, got %4").arg(name).arg(range.min).arg(range.max).arg(value);
}

} // namespace kwb
