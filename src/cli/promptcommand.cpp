// `kwb prompt`: the prompt a run would send for one task, turn and role, and its size.

#include "commands.h"

#include "core/config/regime.h"
#include "core/model/secrets.h"
#include "core/model/tokencounter.h"
#include "core/prompts/tokenbudget.h"
#include "core/run/runcontroller.h"
#include "core/run/runlaunch.h"
#include "core/workers/workersupervisor.h"

#include <QEventLoop>
#include <QJsonDocument>
#include <QJsonObject>

namespace kwb::cli {

namespace {

int failPrompt(bool json, int code, const QString& errorCode, const QString& message)
{
    return commandFailed("prompt", json, code, errorCode, message);
}

} // namespace

int runPrompt(Session& session, const PromptCommandOptions& options)
{
    const bool json = options.json;
    QString error;
    const QString promptsDir = resolvePromptsDir(options.promptsDir, &error);
    if (promptsDir.isEmpty())
        return failPrompt(json, ExitUsage, QStringLiteral("bad_prompts"), error);
    const QStringList taskIds = parseTaskSpec(options.task, &error);
    if (taskIds.size() != 1)
        return failPrompt(json, ExitUsage, QStringLiteral("bad_task"),
                          error.isEmpty() ? QStringLiteral("--task: name one task") : error);
    QString unknown;
    RunRequest request;
    request.taskIds = taskIds;
    request.regime = options.regime;
    request.profile = options.profile;
    request.ablations = ablationsFromList(options.ablate, &unknown);
    request.contextTokens = options.contextTokens;
    request.maxOutputTokens = options.maxOutputTokens;
    request.promptsDir = promptsDir;
    // The shipped KernelBench set asks for KernelBench-format answers, which a KernelBench-only
    // task takes (a native-format run leaves it out: runlaunch.cpp).
    if (promptsDir == defaultPromptsDirFor(QString::fromLatin1(defaults::kAnswerFormatKernelBench)))
        request.answerFormat = QString::fromLatin1(defaults::kAnswerFormatKernelBench);
    if (!unknown.isEmpty())
        return failPrompt(json, ExitUsage, QStringLiteral("bad_ablation"),
                          QStringLiteral("--ablate: unknown switch \"%1\"").arg(unknown));
    std::optional<RunPlan> plan = planRun(request, &error);
    if (!plan)
        return failPrompt(json, ExitUsage, QStringLiteral("bad_regime"), QStringLiteral("--regime: ") + error);
    plan->promptsDir = promptsDir;

    // The task's facts, as a run loads them (tasks, device, analyze, profile where a GPU is).
    RunFactsLoader loader(&session.supervisor());
    QEventLoop loop;
    QList<RunTaskInput> inputs;
    QString loadError;
    QObject::connect(&loader, &RunFactsLoader::loaded, &loop,
                     [&](const QList<RunTaskInput>& loaded, const DeviceFacts&, const HelloInfo&) {
                         inputs = loaded;
                         loop.quit();
                     });
    QObject::connect(&loader, &RunFactsLoader::failed, &loop, [&](const QString& message) {
        loadError = message;
        loop.quit();
    });
    QObject::connect(&loader, &RunFactsLoader::warning, &loop,
                     [](const QString& message) { err() << "kwb prompt: warning: " << message << '\n'; });
    loader.load(*plan, session.options().tasksDir);
    loop.exec();
    if (inputs.isEmpty())
        return failPrompt(json,
                          loader.lastFailure() == RunFactsLoader::Failure::UnknownTask ? ExitBadRequest : ExitWorker,
                          QStringLiteral("facts"), loadError);

    const Regime& regime = plan->regimeForLevel(inputs.first().level());
    const QList<PlannedPrompt> prompts = RunController::plannedPrompts(promptsDir, regime, inputs.first());
    const QString role = options.role.isEmpty() ? regime.answerRole(options.turn) : options.role;
    const PlannedPrompt* chosen = nullptr;
    QStringList available;
    for (const PlannedPrompt& p : prompts) {
        if (!p.error.isEmpty())
            return failPrompt(json, ExitUsage, QStringLiteral("bad_template"), p.error);
        available << QStringLiteral("turn %1 %2").arg(p.turn).arg(p.role);
        if (p.turn == options.turn && p.role == role)
            chosen = &p;
    }
    if (!chosen)
        return failPrompt(json, ExitUsage, QStringLiteral("no_such_prompt"),
                          QStringLiteral("%1 sends no prompt for turn %2, role %3; it sends: %4")
                              .arg(regime.name)
                              .arg(options.turn)
                              .arg(role, available.join(QStringLiteral(", "))));

    // Counted by the server's tokenizer where asked and available, else estimated.
    int tokens = estimateTokens(chosen->text);
    bool byServer = false;
    QString countNote = QStringLiteral("estimated: characters / %1, rounded up").arg(kEstimatedCharsPerToken);
    if (!options.endpoint.isEmpty()) {
        TokenCounter counter;
        counter.setServer(QUrl(options.endpoint), QString(), kwb::secrets::environmentApiKey());
        QEventLoop wait;
        QObject::connect(&counter, &TokenCounter::counted, &wait, [&](qint64, int n) {
            tokens = n;
            byServer = true;
            countNote = QStringLiteral("counted by the server (%1)")
                            .arg(TokenCounter::tokenizeUrl(QUrl(options.endpoint)).toString());
            wait.quit();
        });
        QObject::connect(&counter, &TokenCounter::failed, &wait, [&](qint64, const QString& message) {
            countNote += QStringLiteral("; the server did not count (%1)").arg(message);
            wait.quit();
        });
        counter.count(chosen->text);
        wait.exec();
    }
    const ContextBudget budget = contextBudgetFor(*plan);
    const int worst = chosen->budgetTokens(tokens, budget);
    const bool fits = budget.fits(worst);
    if (json) {
        out() << QString::fromUtf8(QJsonDocument(QJsonObject{{QStringLiteral("ok"), true},
                                                             {QStringLiteral("task"), chosen->task},
                                                             {QStringLiteral("regime"), regime.name},
                                                             {QStringLiteral("turn"), chosen->turn},
                                                             {QStringLiteral("role"), chosen->role},
                                                             {QStringLiteral("template"), chosen->templatePath},
                                                             {QStringLiteral("prompts_dir"), promptsDir},
                                                             {QStringLiteral("prompt"), chosen->text},
                                                             {QStringLiteral("tokens"), tokens},
                                                             {QStringLiteral("counted_by_server"), byServer},
                                                             {QStringLiteral("model_texts"), chosen->modelTexts},
                                                             {QStringLiteral("budget_tokens"), worst},
                                                             {QStringLiteral("fits"), fits}})
                                       .toJson(QJsonDocument::Indented));
    } else {
        out() << chosen->text;
    }
    out().flush();
    // The facts about the prompt on stderr, so stdout diffs between sets.
    err() << "kwb prompt: " << chosen->task << ", " << regime.name << ", turn " << chosen->turn << ", role "
          << chosen->role << " (" << chosen->templatePath << " of " << promptsDir << ")\n";
    if (chosen->modelTexts > 0 || chosen->turn > 1)
        err() << "kwb prompt: placeholders stand for " << chosen->modelTexts << " earlier model text(s) (each up to "
              << budget.maxOutputTokens << " tokens in a run) and, after turn 1, the evaluator's report\n";
    err() << "kwb prompt: " << tokens << " tokens, " << countNote << "\n";
    err() << "kwb prompt: budget " << worst << " + " << kChatTemplateTokens << " chat template + "
          << budget.maxOutputTokens << " max output tokens " << (fits ? "<=" : ">") << ' ' << budget.contextTokens
          << " context tokens: " << (fits ? "fits" : "OVER BUDGET") << '\n';
    err().flush();
    return fits ? ExitSuccess : ExitBadRequest;
}

} // namespace kwb::cli
