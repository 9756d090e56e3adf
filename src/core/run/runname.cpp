#include "core/run/runname.h"

#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/protocol/defaults.h"

#include <cmath>

namespace kwb {

namespace {

QString turnsText(int turns)
{
    return turns == 1 ? QStringLiteral("1 turn") : QStringLiteral("%1 turns").arg(turns);
}

QString templateName(QString path)
{
    if (path.endsWith(QLatin1String(".mustache")))
        path.chop(9);
    return path;
}

} // namespace

QStringList runDistinctions(const RunInfo& run)
{
    const RunConfig& config = run.config;
    const Regime& stored = config.regime.fields;
    const StoredRegime::Stated& has = config.regime.stated;
    QStringList parts;
    // An import: the folder its generations came from, which is all that sets one corpus's runs
    // apart ("#3 import gemini_level1_run compile-only", not eighteen "#n import compile-only").
    if (!config.import.isEmpty()) {
        QString folder = config.import.value(QStringLiteral("run_folder")).toString();
        if (folder.isEmpty())
            folder = config.import.value(QStringLiteral("directory")).toString();
        while (folder.endsWith(QLatin1Char('/')))
            folder.chop(1);
        folder = folder.section(QLatin1Char('/'), -1);
        if (!folder.isEmpty())
            parts << folder;
    }
    const QString regimeName = stored.name.isEmpty() ? run.regime : stored.name;
    for (const QString& off : stored.ablated)
        parts << QStringLiteral("−") + off;

    if (config.regime.stored) {
        // The built-in regime with the same switches off: what this run would be without changes.
        const std::optional<Regime> builtin = Regime::builtin(regimeName);
        if (builtin) {
            const Regime expected = builtin->withAblations(Ablations::fromOffNames(stored.ablated));
            // Only what the stored regime says: an older or hand-written one without a field has
            // nothing to say about it.
            // In a sweep n is what varies between its runs: the regime's own n is named too.
            if (has.n && (stored.n != expected.n || config.isSweep()))
                parts << QStringLiteral("n=%1").arg(stored.n);
            if (has.turns && stored.turns != expected.turns)
                parts << turnsText(stored.turns);
            if (has.temperature &&
                (stored.temperature.has_value() != expected.temperature.has_value() ||
                 (stored.temperature && std::abs(*stored.temperature - *expected.temperature) > 1e-9)))
                parts << (stored.temperature ? QStringLiteral("T=%1").arg(*stored.temperature)
                                             : QStringLiteral("T default"));
            if (has.feedback && stored.feedback != expected.feedback)
                parts << QStringLiteral("feedback %1").arg(toString(stored.feedback));
            if (has.selection && stored.selection != expected.selection)
                parts << QStringLiteral("selection %1").arg(toString(stored.selection));
            if (has.feedbackSource && stored.feedbackSource != expected.feedbackSource)
                parts << QStringLiteral("feedback=%1").arg(toString(stored.feedbackSource));
            const QString answer = stored.roles.value(RegimeRole::Generator);
            if (has.roles && !answer.isEmpty() && answer != expected.roles.value(RegimeRole::Generator))
                parts << QStringLiteral("answer %1").arg(templateName(answer));
        } else {
            // A regime of the user's own: nothing to compare with, so its shape is the name.
            if (has.n)
                parts << QStringLiteral("n=%1").arg(stored.n);
            if (has.turns)
                parts << turnsText(stored.turns);
        }
    }
    if (!config.protocolProfile.isEmpty() && config.protocolProfile != QLatin1String(defaults::kProfile))
        parts << QStringLiteral("profile %1").arg(config.protocolProfile);
    if (config.isSweep())
        parts << QStringLiteral("sweep");
    if (config.isRouted())
        parts << QStringLiteral("routed");
    if (config.compileOnly)
        parts << QStringLiteral("compile-only");
    return parts;
}

QString runDescription(const RunInfo& run)
{
    const QString regime = run.regime.isEmpty() ? QStringLiteral("run") : run.regime;
    const QStringList parts = runDistinctions(run);
    return parts.isEmpty() ? regime : regime + QLatin1Char(' ') + parts.join(QLatin1Char(' '));
}

QString runLabel(const RunInfo& run)
{
    return QStringLiteral("#%1 %2").arg(run.id).arg(runDescription(run));
}

} // namespace kwb
