#pragma once
// The environment the run tests give HeadlessRun (RunEnvironment) and the window's RunSession
// (RunSessionEnvironment): the fake worker of the including test (KWB_FAKEWORKER), no compile
// pool, a short kill grace, no retries, a 20 s request limit, streamed answers, and a database of its own.

#include <QString>

namespace kwb::test {

template <class Environment>
Environment fakeWorkerEnvironment(const QString& databasePath)
{
    Environment env;
    env.databasePath = databasePath;
    env.workerProgram = QStringLiteral(KWB_FAKEWORKER);
    env.compileWorkers = 0;
    env.killGraceMs = 300;
    env.maxRetries = 0;
    env.requestTimeoutMs = 20000;
    env.stream = true; // answers arrive as the model writes them (the Monitor's and HeadlessRun's text path)
    return env;
}

} // namespace kwb::test
