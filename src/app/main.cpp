// kernel-workbench: the desktop workbench.

#include "mainwindow.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QTimer>

#include <cstdio>

int main(int argc, char** argv)
{
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
    parser.addOption(workerOption);
    parser.addOption(quitAfterOption);

    // --version and --help before QApplication exists, so they work without a display.
    for (int i = 1; i < argc; ++i) {
        const QByteArray argument(argv[i]);
        if (argument == "--version" || argument == "-v") {
            std::printf("kernel-workbench %s\n", KWB_VERSION);
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

    kwb::app::MainWindow window(parser.value(workerOption));
    window.show();

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
