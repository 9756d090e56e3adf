// kernel-workbench: the desktop workbench.

#include "mainwindow.h"

#include "core/config/buildinfo.h"
#include "core/model/secrets.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QIcon>
#include <QMessageBox>
#include <QSettings>
#include <QTimer>

#include <cstdio>

int main(int argc, char** argv)
{
    // First, before any thread: the API key into memory and out of the environment, so
    // /proc/<pid>/environ shows none (core/model/secrets.h); the Launch page reads it from there.
    kwb::secrets::takeSecretsFromEnvironment();

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Kernel Workbench: how small language models write CUDA kernels."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption workerOption(
        QStringLiteral("worker"), QStringLiteral("kwb-worker to run (default: $KWB_WORKER, else next to the program)."),
        QStringLiteral("path"));
    const QCommandLineOption quitAfterOption(
        QStringLiteral("quit-after"),
        QStringLiteral("Close after the GPU probe has ended, or after <ms> at most "
                       "(for smoke tests)."),
        QStringLiteral("ms"));
    const QCommandLineOption openOption(
        QStringLiteral("open"), QStringLiteral("Open this run database (kwb run --db)."), QStringLiteral("runs.db"));
    const QCommandLineOption screenshotsOption(
        QStringLiteral("screenshots"),
        QStringLiteral("Write a PNG of every page into <dir> and exit (with --open, pictures of that database)."),
        QStringLiteral("dir"));
    parser.addOption(workerOption);
    parser.addOption(quitAfterOption);
    parser.addOption(openOption);
    parser.addOption(screenshotsOption);
    parser.addPositionalArgument(QStringLiteral("runs.db"), QStringLiteral("Run database to open (as --open)."),
                                 QStringLiteral("[runs.db]"));

    // --version and --help before QApplication exists, so they work without a display.
    for (int i = 1; i < argc; ++i) {
        const QByteArray argument(argv[i]);
        if (argument == "--version" || argument == "-v") {
            std::printf("kernel-workbench %s\n",
                        qPrintable(kwb::versionWithCommit(QStringLiteral(KWB_VERSION), kwb::kwbCommit())));
            return 0;
        }
        if (argument == "--help" || argument == "-h" || argument == "--help-all") {
            // Without an application object Qt cannot name the program itself.
            QString help = parser.helpText();
            help.replace(QStringLiteral("<executable_name>"), QStringLiteral("kernel-workbench"));
            std::printf("%s", qPrintable(help));
            return 0;
        }
    }

    // QApplication takes its own options (-platform, -style, …) out of argv before we parse.
    QApplication application(argc, argv);
    QApplication::setApplicationName(QStringLiteral("kernel-workbench"));
    QApplication::setApplicationDisplayName(QStringLiteral("Kernel Workbench"));
    QApplication::setApplicationVersion(QStringLiteral(KWB_VERSION));
    QApplication::setOrganizationName(QStringLiteral("kernel-workbench"));
    QApplication::setDesktopFileName(QStringLiteral("kernel-workbench"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/kernel-workbench.svg")));
    if (!parser.parse(QApplication::arguments())) {
        std::fprintf(stderr, "kernel-workbench: %s\n", qPrintable(parser.errorText()));
        return 2;
    }

    const bool screenshots = parser.isSet(screenshotsOption);
    kwb::app::MainWindow window(parser.value(workerOption));
    if (screenshots)
        window.resize(1440, 900); // the same pictures on every machine, whatever was saved
    window.show();

    QString database = parser.value(openOption);
    if (database.isEmpty() && !parser.positionalArguments().isEmpty())
        database = parser.positionalArguments().first();
    if (database.isEmpty() && !screenshots) { // pick up where the last session was
        const QString last = QSettings().value(QStringLiteral("lastDatabase")).toString();
        if (QFileInfo::exists(last))
            database = last;
    }
    if (!database.isEmpty() && screenshots) {
        QString error;
        if (!window.openDatabase(database, &error)) {
            std::fprintf(stderr, "kernel-workbench: cannot open %s: %s\n", qPrintable(database), qPrintable(error));
            return 1;
        }
    } else if (!database.isEmpty()) {
        // A file that is not a run store: the window says what it is and offers what can be done.
        if (const QMessageBox* box = window.openDatabaseOrExplain(database))
            std::fprintf(stderr, "kernel-workbench: cannot open %s: %s\n", qPrintable(database),
                         qPrintable(box->text()));
    }

    if (screenshots) {
        const QString dir = parser.value(screenshotsOption);
        int code = 1;
        QObject::connect(&window, &kwb::app::MainWindow::screenshotsFinished, &application,
                         [&](bool ok, const QString& error) {
                             code = ok ? 0 : 1;
                             if (!ok)
                                 std::fprintf(stderr, "kernel-workbench: screenshots: %s\n", qPrintable(error));
                             application.exit(code);
                         });
        window.writeScreenshots(dir, 180 * 1000);
        application.exec();
        return code;
    }

    if (parser.isSet(quitAfterOption)) {
        bool ok = false;
        const int ms = parser.value(quitAfterOption).toInt(&ok);
        if (!ok || ms < 0) {
            std::fprintf(stderr, "kernel-workbench: --quit-after expects milliseconds\n");
            return 2;
        }
        QObject::connect(&window, &kwb::app::MainWindow::deviceProbeFinished, &application, &QApplication::quit,
                         Qt::QueuedConnection);
        QTimer::singleShot(ms, &application, &QApplication::quit);
    }
    return application.exec();
}
