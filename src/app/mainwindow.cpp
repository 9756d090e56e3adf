#include "mainwindow.h"

#include "core/protocolcodec.h"
#include "core/workerlocator.h"
#include "core/workersupervisor.h"

#include <QAction>
#include <QApplication>
#include <QFileInfo>
#include <QJsonObject>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QVBoxLayout>

namespace kwb::app {

namespace {

QString gpuSummary(const QJsonObject& device)
{
    if (!device.value(QLatin1String("available")).toBool())
        return QObject::tr("no GPU (%1)")
            .arg(device.value(QLatin1String("reason")).toString(QObject::tr("no reason given")));
    QString text = device.value(QLatin1String("name")).toString(QObject::tr("unnamed GPU"));
    QStringList facts;
    if (!device.value(QLatin1String("arch")).toString().isEmpty())
        facts << device.value(QLatin1String("arch")).toString();
    if (device.value(QLatin1String("sm_count")).isDouble())
        facts << QObject::tr("%1 SMs").arg(device.value(QLatin1String("sm_count")).toInt());
    if (device.value(QLatin1String("memory_bytes")).isDouble())
        facts << QObject::tr("%1 GB").arg(device.value(QLatin1String("memory_bytes")).toDouble() / 1e9, 0, 'f', 0);
    if (!facts.isEmpty())
        text += QStringLiteral(" (") + facts.join(QStringLiteral(", ")) + QLatin1Char(')');
    return text;
}

} // namespace

MainWindow::MainWindow(const QString& workerPath, QWidget* parent)
    : QMainWindow(parent)
{
    setWindowTitle(tr("Kernel Workbench"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/kernel-workbench.svg")));
    resize(1100, 720);

    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    auto* heading = new QLabel(tr("<h2>Kernel Workbench</h2>"), central);
    m_summary = new QLabel(tr("How a small language model writes CUDA kernels for KernelBench tasks, and which "
                              "interaction around it makes it succeed.<br><br>"
                              "Evaluate a candidate from a terminal with <tt>kwb eval TASK ANSWER.md</tt>; "
                              "the task, run and roofline pages will open here."),
                           central);
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    layout->addWidget(heading);
    layout->addWidget(m_summary);
    layout->addStretch(1);
    setCentralWidget(central);

    m_workerLabel = new QLabel(this);
    m_deviceLabel = new QLabel(this);
    statusBar()->addWidget(m_workerLabel, 1);
    statusBar()->addPermanentWidget(m_deviceLabel);

    setupMenus();
    probeWorker(workerPath);
}

MainWindow::~MainWindow() = default;

QString MainWindow::workerStatus() const
{
    return m_workerLabel->text();
}

QString MainWindow::deviceStatus() const
{
    return m_deviceLabel->text();
}

void MainWindow::setupMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* quit = file->addAction(QIcon::fromTheme(QStringLiteral("application-exit")), tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);
    connect(quit, &QAction::triggered, qApp, &QApplication::closeAllWindows);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* about = help->addAction(tr("&About Kernel Workbench"));
    about->setMenuRole(QAction::AboutRole);
    connect(about, &QAction::triggered, this, &MainWindow::showAbout);
    QAction* aboutQt = help->addAction(tr("About &Qt"));
    aboutQt->setMenuRole(QAction::AboutQtRole);
    connect(aboutQt, &QAction::triggered, qApp, &QApplication::aboutQt);
}

void MainWindow::probeWorker(const QString& workerPath)
{
    const WorkerLocator::Result found = WorkerLocator::locate(workerPath);
    if (!found.found()) {
        setWorkerStatus(tr("Worker: not found"), found.error);
        setDeviceStatus(tr("GPU: unknown"));
        // Emitted later, so a caller that connects after construction still sees it.
        QMetaObject::invokeMethod(this, &MainWindow::deviceProbeFinished, Qt::QueuedConnection);
        return;
    }
    setWorkerStatus(tr("Worker: starting %1 …").arg(QFileInfo(found.program).fileName()), found.program);
    setDeviceStatus(tr("GPU: asking the worker …"));

    m_supervisor = new WorkerSupervisor(this);
    m_supervisor->setProgram(found.program);
    m_supervisor->setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
    // Loading libtorch and creating a CUDA context take seconds on a cold machine.
    m_supervisor->setDefaultTimeout(60 * 1000);

    connect(m_supervisor, &WorkerSupervisor::workerAvailable, this,
            [this, found](qint64 pid, const QJsonObject& hello) {
                QString text =
                    tr("Worker: %1 %2 (protocol %3)")
                        .arg(QFileInfo(found.program).fileName(), hello.value(QLatin1String("worker")).toString(),
                             QString::number(hello.value(QLatin1String("protocol")).toInt()));
                if (!hello.value(QLatin1String("torch")).toString().isEmpty())
                    text += tr(", torch %1").arg(hello.value(QLatin1String("torch")).toString());
                setWorkerStatus(text, tr("%1 (found %2), pid %3").arg(found.program, found.origin).arg(pid));
            });
    connect(m_supervisor, &WorkerSupervisor::responseAvailable, this, [this](qint64 id, const QJsonObject& response) {
        if (id != m_deviceRequest)
            return;
        if (response.value(QLatin1String("ok")).toBool())
            setDeviceStatus(tr("GPU: %1").arg(gpuSummary(response)));
        else
            setDeviceStatus(tr("GPU: unknown"), ProtocolCodec::errorMessage(response));
        // An idle worker would hold a CUDA context and hundreds of MB for nothing.
        m_supervisor->stopWorker();
        Q_EMIT deviceProbeFinished();
    });
    connect(m_supervisor, &WorkerSupervisor::requestFailed, this,
            [this, found](qint64 id, const QString& status, const QString& message) {
                if (id != m_deviceRequest)
                    return;
                setWorkerStatus(tr("Worker: %1").arg(status), found.program + QStringLiteral(": ") + message);
                setDeviceStatus(tr("GPU: unknown"), message);
                Q_EMIT deviceProbeFinished();
            });
    m_deviceRequest = m_supervisor->sendRequest(
        QJsonObject{{QStringLiteral("type"), QStringLiteral("device")}, {QStringLiteral("ceilings"), false}});
}

void MainWindow::setWorkerStatus(const QString& text, const QString& tooltip)
{
    m_workerLabel->setText(text);
    m_workerLabel->setToolTip(tooltip);
    qInfo().noquote() << text << (tooltip.isEmpty() ? QString() : QStringLiteral(" [") + tooltip + QLatin1Char(']'));
}

void MainWindow::setDeviceStatus(const QString& text, const QString& tooltip)
{
    m_deviceLabel->setText(text);
    m_deviceLabel->setToolTip(tooltip);
    qInfo().noquote() << text << (tooltip.isEmpty() ? QString() : QStringLiteral(" [") + tooltip + QLatin1Char(']'));
}

void MainWindow::showAbout()
{
    QMessageBox::about(this, tr("About Kernel Workbench"),
                       tr("<h3>Kernel Workbench %1</h3>"
                          "<p>A workbench for studying how small language models write CUDA kernels for "
                          "KernelBench tasks: prompts, regimes, evaluation and the roofline.</p>"
                          "<p>Worker protocol %2.</p>")
                           .arg(QStringLiteral(KWB_VERSION))
                           .arg(kProtocolVersion));
}

} // namespace kwb::app
