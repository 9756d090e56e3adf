#pragma once
// The supervisor's spares (workersupervisor.h): workers started ahead, while an evaluation runs,
// that answer hello (and `warm`) and nothing else until one takes over, so the next request skips
// the process start and, warmed, the first-use costs. The pool starts, handshakes, warms, ranks and
// drops them; the supervisor takes the next one over (takeNext()) and tells the pool when it is
// idle, when an evaluation is written and when settings change.
//
// Warming: once the supervisor has been idle for warmIdleMs() (a single-shot timer, restarted when
// the supervisor becomes idle and when a spare answers hello while it is idle, stopped when a
// request is queued), the oldest spare that has answered hello and not warm is sent `warm`; when it
// answers, the next one, while the supervisor stays idle. One at a time: two warm-ups at once would
// compete for the host's cores, and a timing that starts would wait for both. With
// setWarmWhileBusy() (EvaluationQueue's setting) every spare is warmed as soon as it answers hello,
// busy or idle: the worker takes the GPU's quiet lock part by part, so a timing that starts
// meanwhile waits for one part at most (docs/decisions.md, "Warm in parts"). A spare that has
// answered hello is ready, warmed or not (an unwarmed one's request pays its own cuda_init); one
// warming may still be taken over (the request then waits for its warm answer), but any ready
// spare is taken first. The warm answer: ok (warm), or ok: false with unknown_type (an older
// worker: not warm, still usable); any other and the spare is dropped. Not sent to a worker whose
// hello says it holds no quiet lock ("gpu_quiet_lock": null): its warm-up could overlap another
// process's timing. Remote spares are never warmed.

#include "core/protocol/protocolcodec.h"
#include "core/protocol/workerresponses.h"
#include "core/workers/workerprocess.h"

#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QTimer>

#include <algorithm>
#include <functional>
#include <optional>

namespace kwb {

/// A worker started ahead. Its state uses Starting, Handshaking, Warming and Idle (ready to take
/// over) only.
struct SpareWorker
{
    QProcess* process = nullptr;
    qint64 pid = 0;
    WorkerState state = WorkerState::None;
    ResponseDecoder decoder;
    QString handshakeId;
    QString warmId;
    HelloInfo hello;
    bool warmAnswered = false;   // warmed, or an older worker said unknown_type: not sent again
    bool warmSentPython = false; // the last warm sent asked for the embedded Python
    bool knowsWarm = false;      // it answered a warm as one: a second warm starts what the first did not
    /// Ready, and its hello carries the warm answer's timings.
    bool warmed() const { return state == WorkerState::Idle && hello.warmed(); }
};

/// The hello a worker takes over with after its warm answer: with the answer's warm_ms when it
/// warmed; unchanged from an older worker that does not know `warm` (unknown_type); none when the
/// answer is anything else (the worker is not trusted then).
std::optional<HelloInfo> helloAfterWarm(const HelloInfo& hello, const QJsonObject& answer, const QString& warmId);

class SparePool : public QObject
{
    Q_OBJECT
public:
    /// Spares kept by default: a spare needs about two candidates' time to start and warm (libtorch's
    /// static initialisation, then the context, its warm parts waiting for the timings), so three
    /// started one candidate apart keep up: on an H200, 98.9 candidates/min against 90.7 with two
    /// (the mean of three runs against one, the same process; docs/decisions.md, session 10).
    static constexpr int kDefaultCount = 3;
    /// How long the supervisor must have been idle (no request running or queued) before its
    /// spares are warmed: longer than the one or two event-loop turns in which a queue sends its
    /// next job (EvaluationQueue) or an NVRTC compile-ahead still running finishes (26-45 ms), far
    /// shorter than a model's generation between evaluations.
    static constexpr int kWarmIdleMs = 250;

    /// launch: how the supervisor starts its workers (its own, read at each start); processes are
    /// children of processParent. idle: whether the supervisor runs and queues no request.
    SparePool(const WorkerLaunchSettings* launch, QObject* processParent, std::function<bool()> idle);
    /// endAll(): the supervisor ends its spares before it is destroyed.
    ~SparePool() override;
    /// Ends the spares (SIGKILL: they hold no request) and waits up to waitMs for each.
    void endAll(int waitMs);

    /// Whether spares are kept at all (the supervisor's setSpareWorker() and its isolation).
    void setEnabled(bool enabled);
    bool enabled() const { return m_enabled; }
    void setFreshWorkers(bool fresh);
    /// Whether a worker the supervisor reuses has retired after a request (it answered
    /// `worker_healthy: false`: a KernelBench-format answer's library was loaded in it, or a sticky
    /// CUDA error): from then on retiringCount() spares are kept, so that the next request does not
    /// wait for a process start and torch's import.
    void setRetiringWorkers(bool retiring);
    bool retiringWorkers() const { return m_retiringWorkers; }
    /// How many spares are kept once workers retire (at most count()): one by default, as a
    /// reused worker that retires now and then needs no more, and the compile pool keeps a
    /// supervisor per compile worker. A GPU slot, where every KernelBench-format candidate retires
    /// its worker, keeps as many as fresh workers do (EvaluationQueue::configureSlot).
    void setRetiringCount(int count);
    int retiringCount() const { return m_retiringCount; }
    /// Whether the supervisor wants spares now: enabled, workers replaced (fresh, or retiring), a
    /// count, a program.
    bool wanted() const;
    /// How many are kept now: count() with fresh workers, at most retiringCount() for retiring ones.
    int keptCount() const { return m_freshWorkers ? m_count : std::min(m_count, m_retiringCount); }
    void setWarmWhileBusy(bool enabled) { m_warmWhileBusy = enabled; }
    bool warmWhileBusy() const { return m_warmWhileBusy; }
    /// Whether a warm starts the embedded Python too (from a KernelBench-format job on). Turned on,
    /// the spares already warmed without it are warmed again, for the Python alone.
    void setWarmPython(bool enabled);
    bool warmPython() const { return m_warmPython; }

    // The benchmark's switches (supervisortuning.h): the product runs with the defaults.
    /// How many to keep (0: none); fewer than before: the spares furthest behind are ended.
    void setCount(int count);
    int count() const { return m_count; }
    /// Whether a top-up starts every missing spare at once; unset: the host's rule (at once where
    /// the host has a core for each spare's start and two more).
    void setStartsAtOnce(std::optional<bool> atOnce) { m_startsAtOnce = atOnce; }
    bool startsAtOnce() const;
    /// Whether spares are warmed at all; a change drops the spares (warmed the other way).
    void setWarm(bool enabled);
    bool warm() const { return m_warm; }
    void setWarmIdleMs(int ms) { m_warmIdleMs = std::max(0, ms); }
    int warmIdleMs() const { return m_warmIdleMs; }

    /// Starts one spare (every missing one where startsAtOnce()) when fewer than count() live.
    void topUp();
    /// With no spare alive, the first starts now.
    void expect();
    /// (Re)starts the warm settle timer when the supervisor is idle and there is anything to warm.
    void armIdleWarm();
    void stopIdleWarm() { m_warmIdleTimer.stop(); }
    bool idleWarmArmed() const { return m_warmIdleTimer.isActive(); }

    bool isEmpty() const { return m_spares.isEmpty(); }
    int size() const { return int(m_spares.size()); }
    /// The spare to take over next: the oldest warmed one, else the oldest ready one, else the
    /// one furthest along (warming, then handshaking, then starting; the oldest of those);
    /// nullptr: none.
    const SpareWorker* next() const;
    /// Takes next() out of the pool, disconnected from it: the supervisor's worker now.
    SpareWorker takeNext();
    /// Process ids of the spares alive (0 for one not started yet), oldest first.
    QList<qint64> pids() const;
    /// Ends every spare (SIGKILL) and forgets it.
    void discardAll();
    /// A handshake or warm id of this supervisor's: "kwb-hello-1", "kwb-warm-2".
    QString nextId(const QString& prefix);

private:
    /// None where no spare is wanted; else at most keptCount(), the youngest ended first.
    void trim();
    void startOne();
    SpareWorker* spareOf(const QProcess* process);
    int nextIndex() const;
    void discard(QProcess* process);
    /// Idle (or warmWhileBusy()), and no spare warming: sends `warm` to the oldest ready spare
    /// not yet sent one.
    void warmIdleSpare();
    bool warmWanted(const HelloInfo& hello) const;
    /// Writes `warm` to the process; returns its id.
    QString sendWarm(SpareWorker& spare);
    /// Whether a warm is still due: never sent, or sent without the Python that is now wanted.
    bool warmDue(const SpareWorker& spare) const;
    void onStarted(QProcess* process);
    void onOutput(QProcess* process);
    void onFinished(QProcess* process);
    /// Takes one answer of the spare; false when it is not the one it may give now.
    bool takeAnswer(SpareWorker& spare, const QJsonObject& response);

    const WorkerLaunchSettings* m_launch;
    QObject* m_processParent;
    std::function<bool()> m_idle;
    bool m_enabled = true;
    bool m_freshWorkers = true;
    bool m_retiringWorkers = false;
    int m_count = kDefaultCount;
    int m_retiringCount = 1;
    bool m_warm = true;
    bool m_warmWhileBusy = false;
    bool m_warmPython = false;
    int m_warmIdleMs = kWarmIdleMs;
    std::optional<bool> m_startsAtOnce; // unset: the host's rule (startsAtOnce())
    int m_idCount = 0;
    QTimer m_warmIdleTimer;
    QList<SpareWorker> m_spares; // oldest first
};

} // namespace kwb
