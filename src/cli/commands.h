#pragma once

#include "core/protocol/defaults.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"

#include <QTextStream>
// The kwb subcommands. Each sends its request through WorkerSupervisor (the one owner of worker
// processes), prints a table or JSON, and returns the process exit code documented in docs/cli.md.

#include "core/workers/evaluationqueue.h"
#include "core/workers/workersupervisor.h"

#include <QString>

namespace kwb::cli {

/// The program's stdout and stderr text streams (flush before exiting or handing over to Qt).
QTextStream& out();
QTextStream& err();

enum ExitCode {
    ExitSuccess = 0,       ///< done; for eval: the candidate is correct
    ExitNotCorrect = 1,    ///< eval: any other status, timeout and crashed included
    ExitUsage = 2,         ///< bad command line, unreadable candidate file
    ExitWorker = 3,        ///< worker not found, could not start, protocol error, internal error
    ExitBadRequest = 4,    ///< unknown task or a request the worker refused
    ExitIncomplete = 5,    ///< run/sweep: done, but a task or unit has no evaluation (resume to retry)
    ExitNoEvaluator = 6,   ///< run/sweep: no GPU can evaluate and --compile-only was not given; nothing was asked
    ExitInterrupted = 130, ///< run: stopped by Ctrl-C (SIGINT); the run can resume
};

struct GlobalOptions
{
    QString worker;   ///< --worker; empty: $KWB_WORKER, then next to kwb
    QString tasksDir; ///< --tasks-dir; empty: the worker's default
};

struct AnalyzeOptions
{
    QString task;
    QString scale = QStringLiteral("full");
    bool json = false;
};

struct EvalOptions
{
    QString task;
    QString candidateFile;
    QString profile = defaults::profile();
    QString scale = defaults::scale();
    QString arch;         ///< empty: the device's
    QString device;       ///< empty: the GPU if there is one; "cpu" (smoke tests) or "none"
    int trials = 0;       ///< timing trials; 0: the profile's
    QString answerFormat; ///< --answer-format native|kernelbench; empty: the worker detects it
    double timeoutS = defaults::kEvaluationTimeoutS; ///< the supervisor's wall-clock limit
    /// --profile-traffic: count the candidate's HBM bytes after timing (`profile_traffic`).
    bool profileTraffic = false;
    bool json = false;
};

struct ReportCommandOptions
{
    QString database;                            ///< --db
    QString runs;                                ///< --runs "1,3"; empty: every run
    QString format = QStringLiteral("markdown"); ///< markdown, csv or json
    QString outFile;                             ///< --out; empty: stdout
};

/// One failure shape for every command: "kwb COMMAND: MESSAGE" on stderr and, with --json,
/// {"ok": false, "error": {"code", "message"}} on stdout. Returns `code`.
int commandFailed(const char* command, bool json, int code, const QString& errorCode, const QString& message);

/// Opens the run store --db names for `command` ("run", "sweep", "import", "report"), as RunStore
/// decides what the file is (issue 38): false with *message the plain reason, a file that is not a
/// run store left as it is, and where to make a new store instead. A migration or a read-only open
/// is said on stderr (RunStore::openNote()).
bool openRunStore(RunStore& store, const char* command, const QString& path, OpenOptions::Access access,
                  QString* message);

/// Prints on stderr that the supervisor's workers run without the OS sandbox, and why, unless
/// they run in it.
void warnWithoutSandbox(const WorkerSupervisor& supervisor);

/// `kwb report`: needs no worker. ExitUsage for a bad --runs list or an unwritable --out,
/// ExitBadRequest for a missing or unreadable database or an unknown run.
int runReport(const ReportCommandOptions& options);

/// `kwb regimes`: the built-in regimes and the user's (core/run/regimefile.h), with any user file that
/// did not load; needs no worker. ExitSuccess (broken files are listed, as `kwb tasks` lists them).
int runRegimes(bool json);

/// `kwb gpus`: the roofline's GPU table (core/tasks/gputable.h), the shipped GPUs and the user's, with
/// any user file left out; needs no worker. ExitSuccess (left-out files are listed), ExitUsage when the
/// shipped table cannot be read (its error names the file, the entry and the field).
int runGpus(bool json);

/// Owns the supervisor for one kwb run: finds the worker and sends requests to it.
class Session
{
public:
    explicit Session(GlobalOptions options);
    /// Finds kwb-worker. Returns ExitSuccess, or ExitWorker after printing why (as JSON if asked).
    int locateWorker(bool json);
    WorkerSupervisor& supervisor() { return m_supervisor; }
    const GlobalOptions& options() const { return m_options; }

private:
    GlobalOptions m_options;
    WorkerSupervisor m_supervisor;
};

int runTasks(Session& session, bool json);
int runAnalyze(Session& session, const AnalyzeOptions& options);
int runEval(Session& session, const EvalOptions& options);
int runDevice(Session& session, bool json, bool ceilings);

} // namespace kwb::cli

namespace kwb::cli {

struct RunCommandOptions
{
    QString regime;                                  ///< --regime NAME (empty with --routing or --resume)
    QString routing;                                 ///< --routing study
    QString tasks;                                   ///< --tasks L1:1-10,L2:1-10
    QString endpoint;                                ///< --endpoint URL (default defaults::kEndpoint)
    QString model;                                   ///< --model NAME
    QString database;                                ///< --db FILE
    int n = 0;                                       ///< --n; 0: the regime's
    int turns = 0;                                   ///< --turns; 0: the regime's
    double temperature = -1;                         ///< --temperature; < 0: the regime's
    QString apiKey;                                  ///< --api-key (never stored); empty: $KWB_API_KEY
    double timeoutS = defaults::kEvaluationTimeoutS; ///< evaluation wall-clock limit
    double modelTimeoutS = 0; ///< --model-timeout: a model request's total limit; 0: the default (or the stored run's)
    QString profile = defaults::profile();
    QString scale = defaults::scale();
    QString ablate;       ///< --ablate best-of-n,feedback-analyzer,monotone,competence
    qint64 resume = 0;    ///< --resume RUN_ID
    QString promptsDir;   ///< --prompts DIR; empty: defaultPromptsDirFor(the answer format)
    QString answerFormat; ///< --answer-format native|kernelbench; empty: native (or the resumed run's)
    int timingTrials = 0; ///< --timing-trials; 0: the profile's
    QString isolation = QStringLiteral("fresh"); ///< --isolation fresh|reuse
    QList<int> sweepNs;                          ///< `kwb sweep --n 1,2,4,8`: the curve's n (empty: a plain run)
    QString sweepId;                             ///< `kwb sweep --sweep ID`: continue that sweep of --db
    /// --max-host-memory (0 bytes: not given: the default, or the resumed run's), --no-os-sandbox
    WorkerLimits workerLimits;
    QList<WorkerTarget> workers;                  ///< --workers; empty: this machine's GPU 0
    bool compileOnly = false;                     ///< --compile-only: "device" "none", correctness not measured
    bool profileTraffic = false;                  ///< --profile-traffic: every evaluation counts its HBM bytes
    bool evaluateIdenticalOnce = false;           ///< --evaluate-identical-once
    bool identicalAcrossRuns = false;             ///< --identical-across-runs
    int pauseGenerationWhileTiming = -1;          ///< --[no-]pause-generation-while-timing; -1: on for a local endpoint
    int contextTokens = defaults::kContextTokens; ///< --context-tokens (0: no check)
    int maxOutputTokens = defaults::kMaxOutputTokens; ///< --max-tokens
    int stopWhenCorrect = -1;                         ///< --[no-]stop-when-correct; -1: the regime's
    QString feedback;           ///< --feedback last|best (toString(FeedbackSource)); empty: the regime's
    int compileWorkers = -1;    ///< --compile-workers N; -1: defaultCompileWorkers (core/run/runlaunch.h)
    int evaluationsPerGpu = -1; ///< --evaluations-per-gpu N; -1: defaultEvaluationsPerGpu (core/run/runlaunch.h)
    bool json = false;
};

/// --prompts: a directory, or the name of a shipped set ("study", "workbench-v1"); empty: the
/// default (the study set). Empty with *error when it names neither.
QString resolvePromptsDir(const QString& option, QString* error);

struct PromptCommandOptions
{
    QString regime;     ///< --regime NAME
    QString task;       ///< --task L2/1
    int turn = 1;       ///< --turn N
    QString role;       ///< --role ROLE; empty: the turn's answer role
    QString promptsDir; ///< --prompts DIR or set name
    QString ablate;     ///< --ablate, as kwb run takes it
    QString profile = defaults::profile();
    QString endpoint; ///< --endpoint URL: count the tokens with the server's tokenizer
    int contextTokens = defaults::kContextTokens;
    int maxOutputTokens = defaults::kMaxOutputTokens;
    bool json = false;
};

/// `kwb prompt`: renders the prompt a run would send for one task, turn and role (placeholders
/// where earlier model texts go) and counts its tokens. Needs the worker (for the task's facts).
int runPrompt(Session& session, const PromptCommandOptions& options);

/// "1,2,4,8" as ascending distinct n >= 1; empty with *error for anything else.
QList<int> parseSweepNs(const QString& text, QString* error);

/// Task specs ("L1:1-10,L2:3"): kwb::parseTaskSpec in core/run/runlaunch.h, shared with the window.
using kwb::parseTaskSpec;

/// `kwb run`: runs a regime (or the study's routing) over tasks into a run store. Exit codes in
/// docs/cli.md; 130 after Ctrl-C (the run is marked cancelled and can be resumed).
int runRun(Session& session, const RunCommandOptions& options);

} // namespace kwb::cli

namespace kwb::cli {

/// `kwb import kernelbench DIR --db FILE`.
struct ImportOptions
{
    QString directory; ///< DIR: the generations
    QString database;  ///< --db FILE (created when missing)
    QString runName;   ///< --run-name; empty: "import [kernelbench] DIRNAME SPEC"
    QString profile = defaults::profile();
    QString scale = defaults::scale();
    QString device;                                  ///< --device cuda|cpu|none; empty: the GPU where there is one
    double timeoutS = defaults::kEvaluationTimeoutS; ///< per generation
    int compileWorkers = -1; ///< --compile-workers N; -1: defaultCompileWorkers for KernelBench's format
    /// --code-block first|last: the convention the source extracted its modules by (defaults::kCodeBlock*)
    QString codeBlock = defaults::codeBlock();
    /// --resume: go on with the latest import of the same folder and settings in --db: generations
    /// judged before keep their verdicts, the rest (a call cut short, machine failures) are judged
    bool resume = false;
    bool json = false;
};

/// Evaluates every generation of the folder into one new run (src/cli/importcommand.cpp). Exit:
/// 0 done (whatever the statuses), 2 no such folder, 3 the worker failed, 4 the database failed.
int runImportKernelBench(Session& session, const ImportOptions& options);

} // namespace kwb::cli
