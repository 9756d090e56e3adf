#include "core/study/evaluationsummary.h"

#include "core/tasks/kernelbound.h"

#include <QJsonObject>

#include <cmath>

namespace kwb {

namespace {

QString num(double v)
{
    return QString::number(v, 'g', 3);
}

QString num(const std::optional<double>& v)
{
    return v ? num(*v) : QStringLiteral("?");
}

QString ms(double v)
{
    return v >= 100 ? QStringLiteral("%1 ms").arg(v, 0, 'f', 1)
                    : QStringLiteral("%1 ms").arg(QString::number(v, 'g', 3));
}

} // namespace

qint64 nonFiniteOutputs(const EvaluationResult& evaluation)
{
    if (!evaluation.correctness || !evaluation.correctness->failureDetail.isObject())
        return 0;
    return qint64(evaluation.correctness->failureDetail.toObject().value(QLatin1String("non_finite")).toDouble(0));
}

QString maxAbsDiffText(const EvaluationResult& evaluation)
{
    if (!evaluation.correctness)
        return {};
    if (const qint64 bad = nonFiniteOutputs(evaluation); bad > 0)
        return QStringLiteral("NaN/Inf"); // the count is the summary's: a column stays narrow
    const std::optional<double>& d = evaluation.correctness->maxAbsDiff;
    if (!d)
        return {};
    return std::isfinite(*d) ? num(*d) : QStringLiteral("non-finite");
}

QStringList notCountedReasons(const EvaluationResult& evaluation)
{
    // One sentence for every page, the prompt's feedback and the report (kernelbound.h).
    const QString why = notCountedReason(evaluation);
    return why.isEmpty() ? QStringList() : QStringList{QStringLiteral("not counted: ") + why};
}

QStringList explainedFlags(const EvaluationResult& evaluation)
{
    QStringList out;
    for (const QString& flag : evaluation.flags) {
        if (flag == QLatin1String("below_roofline_floor"))
            out << QStringLiteral(
                "below_roofline_floor: faster than the task's roofline floor on this GPU; never counted "
                "as correct or fast");
        else if (flag == QLatin1String("speedup_over_10x"))
            out << QStringLiteral(
                "speedup_over_10x: KernelBench's warning, a speed-up above 10× is more often a timing "
                "or caching trick than a kernel; check the code");
        else if (flag == QLatin1String("global_state_reset"))
            out << QStringLiteral(
                "global_state_reset: the answer's import changed torch's global settings (cuDNN, TF32, …); "
                "the evaluator set them back before anything ran, so both sides ran under its own");
        else
            out << flag;
    }
    return out;
}

QString evaluationSummary(const EvaluationResult& e)
{
    QStringList lines;
    if (!e.ok) {
        lines << QStringLiteral("Refused by the worker: %1 %2").arg(e.errorCode, e.errorMessage);
        return lines.join(QLatin1Char('\n'));
    }
    const QString status = e.statusName.isEmpty() ? wireName(e.status) : e.statusName;
    QString head = QStringLiteral("Status: %1").arg(status);
    if (!e.stage.isEmpty() && !e.isCorrect())
        head += QStringLiteral(" (at %1)").arg(e.stage);
    if (e.isCorrect() && !e.countsAsCorrect())
        head += QStringLiteral(", not counted");
    lines << head;
    lines += notCountedReasons(e);
    if (!e.message.isEmpty())
        lines << QStringLiteral("Message: %1").arg(e.message);

    if (e.speedup) {
        QString s =
            QStringLiteral("Speed-up: %1 over the reference%2")
                .arg(formatSpeedup(e), e.timing.interval ? QStringLiteral(" (95 % interval in brackets)") : QString());
        if (e.timing.candidate && e.timing.reference)
            s += QStringLiteral(" (candidate %1 ± %2, reference %3 ± %4, %5 timed calls)")
                     .arg(ms(e.timing.candidate->meanMs), ms(e.timing.candidate->stdMs), ms(e.timing.reference->meanMs),
                          ms(e.timing.reference->stdMs))
                     .arg(e.timing.candidate->trials);
        lines << s;
    } else if (e.timing.candidate) {
        lines << QStringLiteral("Time: %1").arg(ms(e.timing.candidate->meanMs));
    }

    if (e.correctness) {
        const CorrectnessInfo& c = *e.correctness;
        lines << QStringLiteral("Correctness: %1 of %2 trials passed").arg(c.passed).arg(c.trials);
        const QString tolerance =
            QStringLiteral("an element passes when |out − ref| ≤ atol + rtol·|ref| (atol %1, rtol %2)")
                .arg(num(c.atol), num(c.rtol));
        if (const qint64 bad = nonFiniteOutputs(e); bad > 0) {
            lines << QStringLiteral(
                         "Max |diff|: not a number: %1 output element%2 NaN or Inf where the reference is finite")
                         .arg(bad)
                         .arg(bad == 1 ? QStringLiteral(" is") : QStringLiteral("s are"));
        } else {
            lines << QStringLiteral("Max |diff| %1 (atol %2), max rel diff %3 (rtol %4)")
                         .arg(num(c.maxAbsDiff), num(c.atol), num(c.maxRelDiff), num(c.rtol));
            lines << QStringLiteral("Tolerance: ") + tolerance;
            // A large relative difference on a passing output sits where the reference is near 0:
            // there atol, not rtol, is the bound, so it says nothing about the kernel.
            if (c.passed == c.trials && c.trials > 0 && c.maxRelDiff && c.rtol && *c.maxRelDiff > *c.rtol)
                lines << QStringLiteral("The max rel diff above rtol comes from elements whose reference is near 0: "
                                        "there |out − ref| ≤ atol still holds, so they pass.");
        }
        if (c.hasFailure) {
            bool numeric = false;
            const int trial = c.failureTrial.toInt(&numeric);
            lines << QStringLiteral("Failure (trial %1): %2")
                         .arg(numeric ? QString::number(trial + 1) : c.failureTrial, c.failureReason);
        }
        if (c.deterministic && !*c.deterministic)
            lines << QStringLiteral("Not deterministic: two runs on the same inputs differ");
    }
    if (e.compile && e.compile->okKnown && !e.compile->ok)
        lines << QStringLiteral("Compile: failed (see the compile log)");
    if (e.formatError)
        lines << QStringLiteral("Answer format: %1: %2").arg(e.formatError->code, e.formatError->message);
    if (e.compile && !e.compile->kernelFacts.isEmpty()) {
        lines << QStringLiteral("Kernels (from the cubin; the Diff page's Kernels tab has PTX and SASS):");
        for (const KernelFactsInfo& k : e.compile->kernelFacts)
            lines << QStringLiteral("  %1: %2").arg(k.displayName(), kernelReading(k));
    }
    if (e.compile && !e.compile->kernelFactsNote.isEmpty())
        lines << QStringLiteral("Kernel facts: %1").arg(e.compile->kernelFactsNote);
    if (!e.launches.isEmpty()) {
        // As the GPU ran them (issue 40): a library's kernels too, whose names run long.
        lines << QStringLiteral("Launches (the trace of one call, the longest first):");
        constexpr int kShown = 8;
        for (qsizetype i = 0; i < e.launches.size() && i < kShown; ++i) {
            const KernelLaunchConfig& l = e.launches.at(i);
            const QString name = l.name.size() > 60 ? l.name.left(59) + QChar(0x2026) : l.name;
            lines << QStringLiteral("  %1%2: %3")
                         .arg(name, l.custom ? QStringLiteral(" (its own)") : QString(), launchReading(l));
        }
        if (const qsizetype more = e.launches.size() - kShown + e.launchesOmitted; more > 0)
            lines << QStringLiteral("  … and %1 more").arg(more);
    }
    const QStringList flags = explainedFlags(e);
    if (!flags.isEmpty())
        lines << QStringLiteral("Flags:") << flags;
    if (e.degenerate)
        lines << QStringLiteral("Degenerate reference (%1): %2").arg(e.degenerate->kind, e.degenerate->message);
    if (e.profile && !e.profile->name.isEmpty())
        lines << QStringLiteral("Profile: %1").arg(e.profile->name);
    return lines.join(QLatin1Char('\n'));
}

} // namespace kwb
