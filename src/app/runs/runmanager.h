#pragma once
// The workbench's runs: the session running now (or the last one, which the monitor keeps
// showing), and a queue of runs waiting for it. One run at a time: a run's timings need the GPU
// to itself. When a run finishes, the next queued run starts; a run that is cancelled or fails
// holds the queue until the user starts the next one (startNext()), so a broken set-up does not
// fail every queued run in turn.
//
// The launch page submits and queues runs, the monitor follows current(); the main window makes
// one RunManager and gives it to both.

#include "app/runs/runsession.h"

#include <QList>
#include <QObject>
#include <QPointer>

namespace kwb::app {

struct QueuedRun
{
    RunPlan plan;
    RunSessionEnvironment environment;

    /// "agent L2:1-10 → runs.db", "resume #3 → runs.db".
    QString label() const;
};

class RunManager : public QObject
{
    Q_OBJECT
public:
    explicit RunManager(QObject* parent = nullptr);
    ~RunManager() override;

    /// What every run gets unless the launch page says otherwise: the worker program and its
    /// arguments, the tasks directory (the main window sets them from --worker / $KWB_WORKER).
    void setDefaultEnvironment(const RunSessionEnvironment& environment) { m_defaults = environment; }
    const RunSessionEnvironment& defaultEnvironment() const { return m_defaults; }

    /// The latest session (running, paused or ended); nullptr before the first run.
    RunSession* current() const { return m_current; }
    /// A session is preparing, running, pausing or paused.
    bool isBusy() const;

    /// Starts the run now when nothing is busy (returns true), else queues it (returns false).
    bool submit(const RunPlan& plan, const RunSessionEnvironment& environment);
    void enqueue(const RunPlan& plan, const RunSessionEnvironment& environment);
    QList<QueuedRun> queued() const { return m_queue; }
    void removeQueued(int index);
    void clearQueue();
    /// Starts the first queued run when nothing is busy. False when busy or the queue is empty.
    bool startNext();

Q_SIGNALS:
    /// A new session has been started and is now current().
    void sessionStarted(kwb::app::RunSession* session);
    void sessionFinished(kwb::app::RunSession* session, kwb::app::RunSession::State state);
    /// The current session's state changed (for buttons).
    void currentStateChanged(kwb::app::RunSession::State state);
    void queueChanged();

private:
    void startSession(const QueuedRun& run);
    void onSessionFinished(RunSession* session, RunSession::State state);

    RunSessionEnvironment m_defaults;
    QPointer<RunSession> m_current;
    QList<QueuedRun> m_queue;
};

} // namespace kwb::app
