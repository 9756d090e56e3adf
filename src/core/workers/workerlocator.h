#pragma once
// Finds the kwb-worker executable. The build tree is laid out like an install (programs in bin/),
// so the worker sits next to kwb and kernel-workbench in both; $KWB_WORKER overrides that for
// development and for the GPU machine, where the worker is built elsewhere.

#include <QString>

namespace kwb {

class WorkerLocator
{
public:
    static constexpr const char* kEnvironmentVariable = "KWB_WORKER";
    static constexpr const char* kWorkerName = "kwb-worker";

    struct Result
    {
        QString program; ///< absolute path of an executable file; empty when not found
        QString origin;  ///< how it was found: "--worker", "$KWB_WORKER", "next to the program"
        QString error;   ///< why it was not found, naming every place that was looked at
        bool found() const { return !program.isEmpty(); }
    };

    /// Looks, in order, at an explicit path (a command-line option; empty to skip), $KWB_WORKER,
    /// and QCoreApplication::applicationDirPath(). An explicit path or $KWB_WORKER that does not
    /// name an executable is an error, not a reason to fall back: silently running another worker
    /// than the one asked for would make results lie about where they came from.
    static Result locate(const QString& explicitPath = QString());

    /// The same with the directory to search given, for tests and for callers without a
    /// QCoreApplication.
    static Result locate(const QString& explicitPath, const QString& environmentValue, const QString& applicationDir);
};

} // namespace kwb
