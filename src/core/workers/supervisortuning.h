#pragma once
// The supervisor's throughput switches, for the benchmark's A/B runs (bench/supervisor_bench.cpp)
// and the tests that pin each behaviour: not the product's API. kwb and the window run with the
// defaults, which those runs measured (docs/decisions.md, sessions 10-13): nothing under src/
// includes this header, only bench/ and tests/ (the supervisor names it its friend).

#include "core/workers/evaluationqueue.h"
#include "core/workers/workersupervisor.h"

#include <QJsonObject>
#include <QList>

namespace kwb {

struct SupervisorTuning
{
    /// Spares kept unless told (SparePool::kDefaultCount) and the idle settle time before they
    /// are warmed (SparePool::kWarmIdleMs).
    static constexpr int kDefaultSpareCount = SparePool::kDefaultCount;
    static constexpr int kWarmIdleMs = SparePool::kWarmIdleMs;

    /// How many spares to keep (0: none). The supervisor tops up when an `evaluate` is written to
    /// the worker and when a spare becomes ready; fewer than before: the spares furthest behind are
    /// ended.
    static void setSpareCount(WorkerSupervisor& s, int count) { s.m_spares.setCount(count); }
    static int spareCount(const WorkerSupervisor& s) { return s.m_spares.count(); }
    /// Whether a top-up starts every missing spare at once rather than one (bench words `burst`,
    /// `staggered`). By default at once where the host has a core for each spare's start and two
    /// more: 110 against 99-104 candidates/min on the H200's 16 cores with three spares
    /// (docs/decisions.md, session 13).
    static void setSpareStartsAtOnce(WorkerSupervisor& s, bool atOnce) { s.m_spares.setStartsAtOnce(atOnce); }
    static bool spareStartsAtOnce(const WorkerSupervisor& s) { return s.m_spares.startsAtOnce(); }
    /// Whether spares are warmed at all (bench word `nowarm`); on by default.
    static void setWarmSpare(WorkerSupervisor& s, bool enabled) { s.m_spares.setWarm(enabled); }
    static bool warmSpare(const WorkerSupervisor& s) { return s.m_spares.warm(); }
    /// The idle settle time before spares are warmed (default kWarmIdleMs); tests shorten it.
    static void setWarmIdleMs(WorkerSupervisor& s, int ms) { s.m_spares.setWarmIdleMs(ms); }
    static int warmIdleMs(const WorkerSupervisor& s) { return s.m_spares.warmIdleMs(); }
    /// Whether a fresh worker that answered its evaluation is let go as it exits, the next request
    /// starting on a spare meanwhile (on by default); off (bench word `wait`): the next request
    /// waits until the last worker has ended.
    static void setHandOffLeaving(WorkerSupervisor& s, bool enabled) { s.m_leaving.setEnabled(enabled); }
    /// Whether a handed-off worker's exit runs under the GPU's quiet lock held shared (on by
    /// default: no timing on the GPU overlaps it); off (bench word `exitfree`): its EOF at once
    /// (docs/decisions.md, session 12).
    static void setExitUnderLock(WorkerSupervisor& s, bool enabled) { s.m_leaving.setExitUnderLock(enabled); }
    static bool exitUnderLock(const WorkerSupervisor& s) { return s.m_leaving.exitUnderLock(); }
    /// Workers handed off so far, and each one's exit: ms from its EOF to its end, oldest first.
    static int handedOffWorkers(const WorkerSupervisor& s) { return s.m_leaving.handedOff(); }
    static QList<double> leavingExitMs(const WorkerSupervisor& s) { return s.m_leaving.exitMs(); }
    /// Whether host limits are polled in /proc while a request runs (on by default); tests turn
    /// it off to see what the worker's memory cgroup alone proves (memorycgroup.h).
    static void setLimitPolling(WorkerSupervisor& s, bool enabled) { s.m_limitPolling = enabled; }
    /// Whether new local workers get a memory cgroup (on by default, where the machine allows).
    static void setMemoryCgroup(WorkerSupervisor& s, bool enabled) { s.m_launch.memoryCgroup = enabled; }

    /// Fields the queue adds to every evaluate request: the benchmark's A/B switches of the worker
    /// (timing_intent, timing_warmup_shared, trace_exclusive), no part of the product's protocol
    /// (protocolnames.h).
    static void setRequestFields(EvaluationQueue& q, const QJsonObject& fields) { q.m_benchmarkFields = fields; }
};

} // namespace kwb
