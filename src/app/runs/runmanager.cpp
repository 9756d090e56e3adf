#include "app/runs/runmanager.h"

#include <QFileInfo>
#include <QTimer>

namespace kwb::app {

QString QueuedRun::label() const
{
    const QString db = QFileInfo(environment.databasePath).fileName();
    if (plan.resumeRunId > 0)
        return QObject::tr("resume #%1 %2 → %3").arg(plan.resumeRunId).arg(plan.runName(), db);
    return QObject::tr("%1 → %2").arg(plan.runName(), db);
}

RunManager::RunManager(QObject* parent)
    : QObject(parent)
{}

RunManager::~RunManager() = default;

bool RunManager::isBusy() const
{
    return m_current && (m_current->isActive() || m_current->state() == RunSession::State::Paused);
}

bool RunManager::submit(const RunPlan& plan, const RunSessionEnvironment& environment)
{
    if (isBusy()) {
        enqueue(plan, environment);
        return false;
    }
    startSession(QueuedRun{plan, environment});
    return true;
}

void RunManager::enqueue(const RunPlan& plan, const RunSessionEnvironment& environment)
{
    m_queue.append(QueuedRun{plan, environment});
    Q_EMIT queueChanged();
}

void RunManager::removeQueued(int index)
{
    if (index < 0 || index >= m_queue.size())
        return;
    m_queue.removeAt(index);
    Q_EMIT queueChanged();
}

void RunManager::clearQueue()
{
    if (m_queue.isEmpty())
        return;
    m_queue.clear();
    Q_EMIT queueChanged();
}

bool RunManager::startNext()
{
    if (isBusy() || m_queue.isEmpty())
        return false;
    const QueuedRun next = m_queue.takeFirst();
    Q_EMIT queueChanged();
    startSession(next);
    return true;
}

void RunManager::startSession(const QueuedRun& run)
{
    RunSession* previous = m_current;
    auto* session = new RunSession(run.plan, run.environment, this);
    m_current = session;
    connect(session, &RunSession::stateChanged, this, [this, session](RunSession::State state) {
        if (session == m_current)
            Q_EMIT currentStateChanged(state);
    });
    connect(session, &RunSession::finished, this,
            [this, session](RunSession::State state) { onSessionFinished(session, state); });
    Q_EMIT sessionStarted(session);
    session->start();
    // The monitor has moved to the new session; the old one's store and tree are no longer shown.
    if (previous)
        previous->deleteLater();
}

void RunManager::onSessionFinished(RunSession* session, RunSession::State state)
{
    Q_EMIT sessionFinished(session, state);
    if (state == RunSession::State::Finished && session == m_current && !m_queue.isEmpty())
        QTimer::singleShot(0, this, [this] { startNext(); });
}

} // namespace kwb::app
