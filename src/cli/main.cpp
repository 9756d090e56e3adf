// kwb: the workbench without a window. Every subcommand goes through WorkerSupervisor, like the
// GUI, so a hung or crashing candidate ends as a status here too. Exit codes: docs/cli.md.

#include "commands.h"

#include "core/config/buildinfo.h"
#include "core/model/llmclient.h"
#include "core/model/secrets.h"
#include "core/protocol/defaults.h"
#include "core/protocol/triallimits.h"
#include "core/run/regimefile.h"
#include "core/run/runlaunch.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/hostlimits.h"
#include "core/workers/workertarget.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QRegularExpression>

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

using namespace kwb::cli;

int main(int argc, char** argv)
{
    // First, before any thread: the API key into memory, out of the environment and the command
    // line, so /proc/<pid>/environ and /proc/<pid>/cmdline show none (core/model/secrets.h).
    kwb::secrets::takeSecretsFromArguments(argc, argv);
    kwb::secrets::takeSecretsFromEnvironment();

    QCoreApplication application(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("kwb"));
    QCoreApplication::setApplicationVersion(QStringLiteral(KWB_VERSION));

    CLI::App app{"kwb: Kernel Workbench on the command line (tasks, roofline analysis, candidate evaluation).\n"
                 "Exit codes: 0 success (eval: correct), 1 candidate not correct, 2 usage error,\n"
                 "3 worker could not start or broke the protocol, 4 unknown task or bad request\n"
                 "(report: missing or unreadable database, unknown run), 130 run interrupted by Ctrl-C."};
    app.set_version_flag(
        "--version",
        (QStringLiteral("kwb ") + kwb::versionWithCommit(QStringLiteral(KWB_VERSION), kwb::kwbCommit())).toStdString());
    app.require_subcommand(1);
    app.fallthrough(); // global options may come after the subcommand

    std::string worker;
    std::string tasksDir;
    app.add_option("--worker", worker, "kwb-worker to run (default: $KWB_WORKER, else next to kwb)");
    app.add_option("--tasks-dir", tasksDir, "directory of task files (default: the worker's)");

    // eval, run and sweep: what the worker may take of the host, and the OS sandbox.
    std::string maxHostMemory;
    bool noOsSandbox = false;
    std::vector<CLI::Option*> maxHostMemoryOptions;
    std::string workersSpec;
    std::vector<CLI::Option*> workersOptions;
    const auto addWorkerLimits = [&](CLI::App* command) {
        workersOptions.push_back(
            command->add_option("--workers", workersSpec,
                                "where workers run (docs/remote-workers.md): local, local:0,1, ssh:HOST:0,1, "
                                "slurm:partition=P,gpus=N,time=T; several joined by ';' (default: local GPU 0)"));
        maxHostMemoryOptions.push_back(command->add_option(
            "--max-host-memory", maxHostMemory,
            "host memory the worker may take, e.g. 8G or 512M (default: half the machine's memory, at most all "
            "but 4 GiB); over it the evaluation ends as resource_limit"));
        command->add_flag("--no-os-sandbox", noOsSandbox,
                          "run the worker without bubblewrap's sandbox (no network, read-only files), for debugging");
    };

    bool json = false;
    const auto addJson = [&json](CLI::App* command) {
        command->add_flag("--json", json, "print JSON instead of a table");
    };

    CLI::App* tasks = app.add_subcommand("tasks", "list the tasks and any broken task files");
    addJson(tasks);
    CLI::App* regimes =
        app.add_subcommand("regimes", "list the regimes, built in and yours, and any broken regime files");
    addJson(regimes);
    CLI::App* gpus =
        app.add_subcommand("gpus", "list the roofline's GPU table, shipped and yours, and any broken GPU files");
    addJson(gpus);

    std::string analyzeTask;
    std::string analyzeScale = "full";
    CLI::App* analyze =
        app.add_subcommand("analyze", "FLOPs, bytes (unfused and fused) and intensity of a task's reference");
    analyze->add_option("TASK", analyzeTask, "task id, e.g. L2/1")->required();
    analyze->add_option("--scale", analyzeScale, "full or smoke")->check(CLI::IsMember({"full", "smoke"}));
    addJson(analyze);

    EvalOptions eval;
    std::string evalTask, candidate, profile = kwb::defaults::kProfile, evalScale = kwb::defaults::kScale, arch,
                                     evalDevice;
    CLI::App* evalCommand = app.add_subcommand("eval", "evaluate a candidate answer (Markdown) against a task");
    evalCommand->add_option("TASK", evalTask, "task id, e.g. L2/1")->required();
    evalCommand->add_option("CANDIDATE", candidate, "the model's answer, a Markdown file")->required();
    evalCommand
        ->add_option("--timeout", eval.timeoutS,
                     "wall-clock limit in seconds (default " + std::to_string(kwb::defaults::kEvaluationTimeoutS) + ")")
        ->check(CLI::Range(0.001, 1e6)); // the supervisor's timer counts int milliseconds
    // Profiles are the worker's (announced in hello): checked once it has answered, not here.
    evalCommand->add_option("--profile", profile,
                            std::string("protocol profile, one the worker announces (default ") +
                                kwb::defaults::kProfile + ")");
    evalCommand->add_option("--scale", evalScale, "full or smoke")->check(CLI::IsMember({"full", "smoke"}));
    // Trial counts are checked after parsing (below), for a plain message with the range.
    struct BoundedCount
    {
        CLI::Option* option;
        const int* value;
        kwb::CountRange range;
    };
    std::vector<BoundedCount> boundedCounts;
    boundedCounts.push_back(
        {evalCommand->add_option("--trials", eval.trials,
                                 "timing trials (fixed method) or the most pairs (adaptive); default: the profile's"),
         &eval.trials, kwb::TrialLimits::Timing});
    evalCommand->add_option("--arch", arch, "compile for this architecture (sm_XY) when there is no GPU")
        ->check([](const std::string& value) {
            return QString::fromStdString(value).contains(QRegularExpression(QStringLiteral("^sm_[0-9]{2,3}a?$")))
                       ? std::string()
                       : std::string("expected sm_XY, e.g. sm_90");
        });
    evalCommand
        ->add_option("--device", evalDevice,
                     "cuda (default where there is a GPU), cpu (torch-only candidates at smoke scale), "
                     "or none (stop after the sandbox check)")
        ->check(CLI::IsMember({"cuda", "cpu", "none"}));
    std::string evalAnswerFormat;
    evalCommand
        ->add_option("--answer-format", evalAnswerFormat,
                     "native (cuda and python blocks) or kernelbench (class ModelNew with load_inline); "
                     "default: detected from the answer")
        ->check(CLI::IsMember({kwb::defaults::kAnswerFormatNative, kwb::defaults::kAnswerFormatKernelBench}));
    evalCommand->add_flag("--profile-traffic", eval.profileTraffic,
                          "after a correct evaluation, count the candidate's HBM bytes with CUPTI's DRAM counters "
                          "(one more call, after timing; a profiler failure is reported, never the candidate's)");
    addWorkerLimits(evalCommand);
    addJson(evalCommand);

    bool noCeilings = false;
    CLI::App* device = app.add_subcommand("device", "the GPU the worker sees, with measured ceilings");
    device->add_flag("--no-ceilings", noCeilings, "skip measuring bandwidth and FLOP ceilings");
    addJson(device);

    ReportCommandOptions reportOptions;
    std::string reportDb, reportRuns, reportFormat = "markdown", reportOut;
    CLI::App* report = app.add_subcommand(
        "report", "the study's tables for stored runs: correct/fast_1/compiled % with intervals, paired comparisons");
    report->add_option("--db", reportDb, "the run store (SQLite file)")->required();
    report->add_option("--runs", reportRuns, "run ids, comma-separated (default: every run)");
    report->add_option("--format", reportFormat, "markdown (default), csv or json")
        ->check(CLI::IsMember({"markdown", "csv", "json"}));
    report->add_option("--out", reportOut, "write to this file instead of stdout");

    RunCommandOptions runOptions;
    std::string runRegime, runRouting, runTaskSpec, runEndpoint, runModel, runDb, runApiKey,
        runProfile = kwb::defaults::kProfile, runScale = kwb::defaults::kScale, runAblate, runPrompts, runAnswerFormat,
        runFeedback;
    std::string runIsolation = "fresh", sweepNs = "1,2,4,8", sweepId;
    // `run` and `sweep` take the same options; only one of them is parsed.
    bool runPauseOn = false, runPauseOff = false, runStopWhenCorrect = false, runNoStopWhenCorrect = false;
    const auto addRunOptions = [&](CLI::App* command, bool sweep) {
        CLI::Option* regimeOption = command->add_option("--regime", runRegime,
                                                        "a regime `kwb regimes` lists: built in (zero-shot, "
                                                        "profiling-guided, iterative, agent, pilot-v1) or yours");
        if (!sweep) {
            CLI::Option* routingOption =
                command->add_option("--routing", runRouting, "study: a regime per level (L1, L3 guided; L2 agent)")
                    ->check(CLI::IsMember({"study"}));
            regimeOption->excludes(routingOption);
        }
        command->add_option("--tasks", runTaskSpec,
                            "tasks: a set (study = the study's 30, level1, level2, level3, all) or ranges, or a "
                            "comma list of both, e.g. study, level2, L1:1-10,L2/3");
        command->add_option("--endpoint", runEndpoint,
                            std::string("OpenAI-compatible base URL (default ") + kwb::defaults::kEndpoint + ")");
        command->add_option("--model", runModel, "model name sent to the server");
        command->add_option("--db", runDb, "the run store (SQLite file; created when missing)")->required();
        if (sweep)
            command
                ->add_option("--n", sweepNs,
                             "the n of the curve, e.g. 1,2,4,8: a run of the whole regime per n, paired seeds")
                ->capture_default_str();
        if (sweep)
            command->add_option("--sweep", sweepId,
                                "continue sweep ID of --db (same --regime, --tasks): finished runs are kept, an "
                                "unfinished one resumed, a missing n started");
        else
            command->add_option("--n", runOptions.n, "candidates per turn (default: the regime's)")
                ->check(CLI::Range(1, kwb::kRegimeMaxN));
        command->add_option("--turns", runOptions.turns, "turns at most (default: the regime's)")
            ->check(CLI::Range(1, kwb::kRegimeMaxTurns));
        command->add_option("--temperature", runOptions.temperature, "sampling temperature (default: the regime's)")
            ->check(CLI::Range(0.0, kwb::kRegimeMaxTemperature));
        command->add_option("--api-key", runApiKey, "API key (default: $KWB_API_KEY; never stored)");
        command
            ->add_option("--timeout", runOptions.timeoutS,
                         "evaluation wall-clock limit in seconds (default " +
                             std::to_string(kwb::defaults::kEvaluationTimeoutS) + ")")
            ->check(CLI::Range(0.001, 1e6));
        command
            ->add_option("--model-timeout", runOptions.modelTimeoutS,
                         "a model request's total limit in seconds, retries included (default " +
                             std::to_string(kwb::kDefaultModelDeadlineMs / 1000) + ")")
            ->check(CLI::Range(1.0, 86400.0));
        command->add_option("--profile", runProfile,
                            std::string("protocol profile, one the worker announces (default ") +
                                kwb::defaults::kProfile + ")");
        command->add_option("--scale", runScale, "full or smoke")->check(CLI::IsMember({"full", "smoke"}));
        boundedCounts.push_back(
            {command->add_option("--timing-trials", runOptions.timingTrials,
                                 "timed runs per candidate and reference (default: the profile's, 100)"),
             &runOptions.timingTrials, kwb::TrialLimits::Timing});
        command
            ->add_option("--isolation", runIsolation,
                         "fresh: a new worker per candidate (default); reuse: keep a healthy worker")
            ->check(CLI::IsMember({"fresh", "reuse"}));
        command->add_option("--ablate", runAblate, "switch parts off: best-of-n,feedback-analyzer,monotone,competence");
        command->add_flag("--compile-only", runOptions.compileOnly,
                          "evaluate without a GPU: compile and sandbox check only; correctness is not measured "
                          "(stored with the run)");
        command->add_flag("--profile-traffic", runOptions.profileTraffic,
                          "count each correct candidate's HBM bytes with CUPTI after timing, for the roofline "
                          "(stored with the run)");
        command->add_flag("--evaluate-identical-once", runOptions.evaluateIdenticalOnce,
                          "evaluate byte-identical answers of a task once: later copies are stored with the first "
                          "one's verdict and timing, marked reused_from_candidate (never a machine failure's; "
                          "stored with the run)");
        command->add_flag("--identical-across-runs", runOptions.identicalAcrossRuns,
                          "--evaluate-identical-once, and also reuse the verdicts of this database's other runs made "
                          "with the same evaluation settings (profile, scale, trials, limits, seeds, kwb build, GPU), "
                          "marked reused_from_run (stored with the run)");
        command->add_flag("--stop-when-correct", runStopWhenCorrect,
                          "no further turn once a task has a correct candidate (default: the regime's; the agent "
                          "goes on for speed; stored with the run)");
        command->add_flag("--no-stop-when-correct", runNoStopWhenCorrect,
                          "keep turning after a correct candidate (monotone selection keeps it)");
        command
            ->add_option("--feedback", runFeedback,
                         "what turns 2... are shown: last (the previous turn's best candidate, default) or best "
                         "(the best so far); selection is unchanged (stored with the run)")
            ->check(CLI::IsMember({kwb::toString(kwb::FeedbackSource::Last).toStdString(),
                                   kwb::toString(kwb::FeedbackSource::Best).toStdString()}));
        command->add_flag("--pause-generation-while-timing", runPauseOn,
                          "send no new model request while a candidate is on the GPU (default: on for an endpoint "
                          "on this machine)");
        command->add_flag("--no-pause-generation-while-timing", runPauseOff,
                          "let the model generate while a candidate is timed");
        if (!sweep)
            command
                ->add_option("--resume", runOptions.resume, "continue this run of --db with its stored configuration")
                ->check(CLI::PositiveNumber);
        command->add_option(
            "--prompts", runPrompts,
            "prompt templates: a directory or a shipped set, study (default), workbench-v1 or kernelbench "
            "(the default for --answer-format kernelbench)");
        command
            ->add_option("--context-tokens", runOptions.contextTokens,
                         "the model's context length: every prompt plus --max-tokens must fit (default " +
                             std::to_string(kwb::defaults::kContextTokens) + "; 0: no check)")
            ->check(CLI::Range(0, 1 << 24));
        command
            ->add_option("--max-tokens", runOptions.maxOutputTokens,
                         "the most tokens an answer may take, sent as max_tokens (default " +
                             std::to_string(kwb::defaults::kMaxOutputTokens) + ")")
            ->check(CLI::Range(1, 1 << 24));
        command
            ->add_option("--answer-format", runAnswerFormat,
                         "native (default: cuda and python blocks, the workbench's own format, compiled by NVRTC "
                         "in about a second) or kernelbench (the study's preset: class ModelNew with load_inline "
                         "in KernelBench's prompt structure, built by nvcc in tens of seconds): what the prompts "
                         "ask for and every evaluation expects (stored with the run)")
            ->check(CLI::IsMember({kwb::defaults::kAnswerFormatNative, kwb::defaults::kAnswerFormatKernelBench}));
        command
            ->add_option("--compile-workers", runOptions.compileWorkers,
                         "CPU workers compiling candidates ahead of the GPU, 0: none (default: 1 for native "
                         "answers, " +
                             std::to_string(kwb::defaultCompileWorkers(kwb::defaults::kAnswerFormatKernelBench)) +
                             " here for kernelbench: 3/4 of the cores, at most one per 6 GiB of 3/4 of the memory; "
                             "stored with the run)")
            ->check(CLI::Range(0, 256));
        command
            ->add_option("--evaluations-per-gpu", runOptions.evaluationsPerGpu,
                         "candidates evaluated at once on each local GPU (default: " +
                             std::to_string(kwb::defaultEvaluationsPerGpu(kwb::defaults::kAnswerFormatNative)) +
                             " for native answers, " +
                             std::to_string(kwb::defaultEvaluationsPerGpu(kwb::defaults::kAnswerFormatKernelBench)) +
                             " for kernelbench; a remote worker has one): their timings still "
                             "run one at a time under the GPU's quiet lock, while the other stages (a "
                             "KernelBench answer's module and reference built on the CPU, a worker's start) "
                             "overlap; stored with the run where not 1")
            ->check(CLI::Range(1, kwb::EvaluationQueue::kMaxEvaluationsPerGpu));
        addWorkerLimits(command);
        addJson(command);
    };
    CLI::App* runCommand = app.add_subcommand(
        "run", "run a regime (or the study's routing) over tasks against a model server into a run store");
    addRunOptions(runCommand, false);
    CLI::App* sweepCommand = app.add_subcommand(
        "sweep", "best-of-n curve as the study ran it: the whole regime once per n (n candidates per turn, "
                 "paired seeds), correct % and compiled % at each n");
    addRunOptions(sweepCommand, true);

    PromptCommandOptions promptOptions;
    std::string promptRegime, promptTask, promptRole, promptPrompts, promptAblate, promptEndpoint,
        promptProfile = kwb::defaults::kProfile;
    CLI::App* promptCommand =
        app.add_subcommand("prompt", "print the prompt a run sends for a task, turn and role, and its token count");
    promptCommand->add_option("--regime", promptRegime, "a regime `kwb regimes` lists, e.g. agent")->required();
    promptCommand->add_option("--task", promptTask, "the task, e.g. L2/1")->required();
    promptCommand->add_option("--turn", promptOptions.turn, "the turn (default 1)")
        ->check(CLI::Range(1, kwb::kRegimeMaxTurns));
    promptCommand->add_option("--role", promptRole, "the role (default: the turn's answer role)");
    promptCommand->add_option("--prompts", promptPrompts,
                              "prompt templates: a directory or a shipped set, study (default) or workbench-v1");
    promptCommand->add_option("--ablate", promptAblate, "as kwb run takes it, e.g. competence");
    promptCommand->add_option("--profile", promptProfile, "the protocol profile whose tolerance the prompt states");
    promptCommand->add_option("--endpoint", promptEndpoint,
                              "count the tokens with this server's tokenizer (POST /tokenize), else estimate");
    promptCommand->add_option("--context-tokens", promptOptions.contextTokens, "the context to check against")
        ->check(CLI::Range(0, 1 << 24));
    promptCommand->add_option("--max-tokens", promptOptions.maxOutputTokens, "the answer's max_tokens")
        ->check(CLI::Range(1, 1 << 24));
    addJson(promptCommand);
    ImportOptions importOptions;
    std::string importDir, importDb, importName, importProfile = kwb::defaults::kProfile,
                                                 importScale = kwb::defaults::kScale, importDevice,
                                                 importCodeBlock = kwb::defaults::kCodeBlockFirst;
    CLI::App* importCommand = app.add_subcommand("import", "bring generations made elsewhere into a run store");
    importCommand->require_subcommand(1);
    CLI::App* importKernelBench = importCommand->add_subcommand(
        "kernelbench", "evaluate a folder of KernelBench generations (runs/<run>/level_L_problem_P_sample_S_kernel.py, "
                       "_solution_S_, _response.txt, level1/problem3/sample0.py) into a run per run folder, "
                       "with the verdicts its eval_results.json recorded beside ours");
    importKernelBench->add_option("DIR", importDir, "the folder of generations")->required();
    importKernelBench->add_option("--db", importDb, "the run store (SQLite file; created when missing)")->required();
    importKernelBench->add_option(
        "--run-name", importName,
        "the run's name (default: import [kernelbench] FOLDER SPEC; several run folders: N (FOLDER))");
    importKernelBench->add_option("--profile", importProfile,
                                  std::string("protocol profile (default ") + kwb::defaults::kProfile + ")");
    importKernelBench->add_option("--scale", importScale, "full or smoke")->check(CLI::IsMember({"full", "smoke"}));
    importKernelBench->add_option("--device", importDevice, "cuda (default where there is a GPU), cpu or none")
        ->check(CLI::IsMember({"cuda", "cpu", "none"}));
    importKernelBench->add_option("--timeout", importOptions.timeoutS, "wall-clock limit per generation in seconds")
        ->check(CLI::Range(0.001, 1e6));
    importKernelBench
        ->add_option("--compile-workers", importOptions.compileWorkers,
                     "CPU workers building the generations' extensions ahead of the GPU, 0: none "
                     "(default " +
                         std::to_string(kwb::defaultCompileWorkers(kwb::defaults::kAnswerFormatKernelBench)) +
                         " here: 3/4 of the cores, at most one per 6 GiB of 3/4 of the memory)")
        ->check(CLI::Range(0, 256));
    importKernelBench
        ->add_option("--code-block", importCodeBlock,
                     "where a whole response has several ```python blocks defining ModelNew, the one that is "
                     "the module: first (KernelBench's extract_first_code, the default) or last (harnesses "
                     "built on extract_last_code, e.g. Kernel-Coder's)")
        ->check(CLI::IsMember({kwb::defaults::kCodeBlockFirst, kwb::defaults::kCodeBlockLast}));
    importKernelBench->add_flag("--resume", importOptions.resume,
                                "go on with this folder's latest import in --db (same profile, scale, device and code "
                                "block): generations judged before keep their verdicts, the others are judged now");
    addWorkerLimits(importKernelBench);
    addJson(importKernelBench);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error); // prints help, the version, or the error with a hint
        return code == 0 ? ExitSuccess : ExitUsage;
    }
    for (const BoundedCount& bounded : boundedCounts) {
        if (bounded.option->count() == 0)
            continue;
        const QString error =
            kwb::countRangeError(QString::fromStdString(bounded.option->get_name()), *bounded.value, bounded.range);
        if (!error.isEmpty()) {
            std::cerr << "kwb: " << error.toStdString() << '\n';
            return ExitUsage;
        }
    }

    kwb::WorkerLimits workerLimits; // 0 bytes: the default (or, on resume, the stored run's)
    workerLimits.osSandbox = !noOsSandbox;
    for (const CLI::Option* option : maxHostMemoryOptions) {
        if (option->count() == 0)
            continue;
        QString error;
        const std::optional<qint64> bytes = kwb::parseByteSize(QString::fromStdString(maxHostMemory), &error);
        if (!bytes) {
            std::cerr << "kwb: --max-host-memory: " << error.toStdString() << '\n';
            return ExitUsage;
        }
        workerLimits.hostMemoryBytes = *bytes;
    }

    QList<kwb::WorkerTarget> workers; // empty: local GPU 0, as before --workers
    for (const CLI::Option* option : workersOptions) {
        if (option->count() == 0)
            continue;
        QString error;
        const std::optional<QList<kwb::WorkerTarget>> parsed =
            kwb::parseWorkerSpec(QString::fromStdString(workersSpec), {0}, &error);
        if (!parsed) {
            std::cerr << "kwb: " << error.toStdString() << '\n';
            return ExitUsage;
        }
        workers = *parsed;
    }
    if (evalCommand->parsed() && workers.size() > 1) {
        std::cerr << "kwb eval: --workers names " << workers.size() << " GPUs; eval runs on one (e.g. ssh:gpu-box:0)\n";
        return ExitUsage;
    }

    if (regimes->parsed()) // reads regime files only: no worker
        return runRegimes(json);
    if (gpus->parsed()) // reads the GPU table only: no worker
        return runGpus(json);
    if (report->parsed()) { // reads the run store only: no worker
        reportOptions.database = QString::fromStdString(reportDb);
        reportOptions.runs = QString::fromStdString(reportRuns);
        reportOptions.format = QString::fromStdString(reportFormat);
        reportOptions.outFile = QString::fromStdString(reportOut);
        return runReport(reportOptions);
    }

    if (sweepCommand->parsed()) {
        QString nsError;
        runOptions.sweepNs = parseSweepNs(QString::fromStdString(sweepNs), &nsError);
        runOptions.sweepId = QString::fromStdString(sweepId);
        if (runOptions.sweepNs.isEmpty()) {
            std::cerr << "kwb sweep: " << nsError.toStdString() << '\n';
            return ExitUsage;
        }
    }
    if ((runCommand->parsed() && runOptions.resume == 0) || sweepCommand->parsed()) {
        std::string missing;
        if (runRegime.empty() && runRouting.empty())
            missing = "--regime or --routing";
        else if (runTaskSpec.empty())
            missing = "--tasks";
        if (!missing.empty()) {
            std::cerr << (sweepCommand->parsed() ? "kwb sweep: " : "kwb run: ") << missing
                      << (sweepCommand->parsed() ? " is required\n" : " is required (unless --resume)\n");
            return ExitUsage;
        }
        QString specError;
        if (parseTaskSpec(QString::fromStdString(runTaskSpec), &specError).isEmpty()) {
            std::cerr << "kwb run: " << specError.toStdString() << '\n';
            return ExitUsage;
        }
    }

    // Absolute: the worker runs in its sandbox's own working folder, where kwb's relative path means nothing.
    const QString tasksPath =
        tasksDir.empty() ? QString() : QFileInfo(QString::fromStdString(tasksDir)).absoluteFilePath();
    Session session(GlobalOptions{QString::fromStdString(worker), tasksPath});
    if (const int code = session.locateWorker(json))
        return code;

    if (tasks->parsed())
        return runTasks(session, json);
    if (analyze->parsed())
        return runAnalyze(
            session, AnalyzeOptions{QString::fromStdString(analyzeTask), QString::fromStdString(analyzeScale), json});
    if (evalCommand->parsed()) {
        eval.task = QString::fromStdString(evalTask);
        eval.candidateFile = QString::fromStdString(candidate);
        eval.profile = QString::fromStdString(profile);
        eval.scale = QString::fromStdString(evalScale);
        eval.arch = QString::fromStdString(arch);
        eval.device = QString::fromStdString(evalDevice);
        eval.answerFormat = QString::fromStdString(evalAnswerFormat);
        eval.json = json;
        session.supervisor().setLimits(workerLimits);
        if (!workers.isEmpty())
            session.supervisor().setTarget(workers.first());
        warnWithoutSandbox(session.supervisor());
        return runEval(session, eval);
    }
    if (device->parsed())
        return runDevice(session, json, !noCeilings);
    if (promptCommand->parsed()) {
        promptOptions.regime = QString::fromStdString(promptRegime);
        promptOptions.task = QString::fromStdString(promptTask);
        promptOptions.role = QString::fromStdString(promptRole);
        promptOptions.promptsDir = QString::fromStdString(promptPrompts);
        promptOptions.ablate = QString::fromStdString(promptAblate);
        promptOptions.profile = QString::fromStdString(promptProfile);
        promptOptions.endpoint = QString::fromStdString(promptEndpoint);
        promptOptions.json = json;
        return runPrompt(session, promptOptions);
    }
    if (importKernelBench->parsed()) {
        importOptions.directory = QString::fromStdString(importDir);
        importOptions.database = QString::fromStdString(importDb);
        importOptions.runName = QString::fromStdString(importName);
        importOptions.profile = QString::fromStdString(importProfile);
        importOptions.scale = QString::fromStdString(importScale);
        importOptions.device = QString::fromStdString(importDevice);
        importOptions.codeBlock = QString::fromStdString(importCodeBlock);
        importOptions.json = json;
        session.supervisor().setLimits(workerLimits);
        warnWithoutSandbox(session.supervisor());
        return runImportKernelBench(session, importOptions);
    }
    if (runCommand->parsed() || sweepCommand->parsed()) {
        runOptions.isolation = QString::fromStdString(runIsolation);
        if (runStopWhenCorrect && runNoStopWhenCorrect) {
            std::cerr << "kwb: --stop-when-correct and --no-stop-when-correct exclude each other\n";
            return ExitUsage;
        }
        if (runStopWhenCorrect || runNoStopWhenCorrect)
            runOptions.stopWhenCorrect = runStopWhenCorrect ? 1 : 0;
        if (runPauseOn || runPauseOff)
            runOptions.pauseGenerationWhileTiming = runPauseOn && !runPauseOff ? 1 : 0;
        runOptions.regime = QString::fromStdString(runRegime);
        runOptions.routing = QString::fromStdString(runRouting);
        runOptions.tasks = QString::fromStdString(runTaskSpec);
        runOptions.endpoint = QString::fromStdString(runEndpoint);
        runOptions.model = QString::fromStdString(runModel);
        runOptions.database = QString::fromStdString(runDb);
        runOptions.apiKey = QString::fromStdString(runApiKey);
        runOptions.profile = QString::fromStdString(runProfile);
        runOptions.scale = QString::fromStdString(runScale);
        runOptions.ablate = QString::fromStdString(runAblate);
        runOptions.feedback = QString::fromStdString(runFeedback);
        runOptions.promptsDir = QString::fromStdString(runPrompts);
        runOptions.answerFormat = QString::fromStdString(runAnswerFormat);
        runOptions.json = json;
        runOptions.workerLimits = workerLimits;
        runOptions.workers = workers;
        return runRun(session, runOptions);
    }
    return ExitUsage;
}
