#pragma once
// The workbench's main window. For now it shows which worker it found and which GPU that worker
// reports; the pages (tasks, runs, roofline) attach here later. It talks to workers only through
// WorkerSupervisor and never waits on one: the UI stays responsive while a worker loads libtorch.

#include <QMainWindow>

class QLabel;

namespace kwb {
class WorkerSupervisor;
}

namespace kwb::app {

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    /// workerPath: from --worker; empty to use $KWB_WORKER or the worker next to the program.
    explicit MainWindow(const QString& workerPath = QString(), QWidget* parent = nullptr);
    ~MainWindow() override;

    /// The status bar's texts, for smoke tests and logs.
    QString workerStatus() const;
    QString deviceStatus() const;

Q_SIGNALS:
    /// The device probe has ended, with an answer or a failure.
    void deviceProbeFinished();

private:
    void setupMenus();
    void probeWorker(const QString& workerPath);
    void setWorkerStatus(const QString& text, const QString& tooltip = QString());
    void setDeviceStatus(const QString& text, const QString& tooltip = QString());
    void showAbout();

    WorkerSupervisor* m_supervisor = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_workerLabel = nullptr;
    QLabel* m_deviceLabel = nullptr;
    qint64 m_deviceRequest = 0;
};

} // namespace kwb::app
