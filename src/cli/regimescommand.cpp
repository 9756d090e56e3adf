// `kwb regimes`: the regimes a run can use, built in and the user's (core/run/regimefile.h), and
// every user file that did not load, with why. Needs no worker.

#include "commands.h"
#include "textformat.h"

#include "core/run/regimefile.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace kwb::cli {

int runRegimes(bool json)
{
    const RegimeCatalog catalog = regimeCatalog();
    if (json) {
        QJsonArray regimes;
        for (const RegimeEntry& e : catalog.entries) {
            QJsonObject o = e.regime.toJson();
            o.remove(QStringLiteral("ablated")); // a run's switches, never a regime file's
            o.insert(QStringLiteral("builtin"), e.builtin);
            if (!e.builtin)
                o.insert(QStringLiteral("file"), e.file);
            regimes.append(o);
        }
        const QJsonObject top{{QStringLiteral("ok"), true},
                              {QStringLiteral("regimes"), regimes},
                              {QStringLiteral("user_dir"), userRegimesDir()},
                              {QStringLiteral("errors"), QJsonArray::fromStringList(catalog.errors)}};
        out() << QString::fromUtf8(QJsonDocument(top).toJson(QJsonDocument::Indented));
        out().flush();
        return ExitSuccess;
    }
    TextTable table({QStringLiteral("NAME"), QStringLiteral("N"), QStringLiteral("TURNS"), QStringLiteral("T"),
                     QStringLiteral("FEEDBACK"), QStringLiteral("SELECTION"), QStringLiteral("FROM"),
                     QStringLiteral("DESCRIPTION")});
    table.setRightAligned(1);
    table.setRightAligned(2);
    for (const RegimeEntry& e : catalog.entries) {
        const Regime& r = e.regime;
        table.addRow({r.name, QString::number(r.n), QString::number(r.turns),
                      r.temperature ? QString::number(*r.temperature) : QStringLiteral("server's"),
                      toString(r.feedback), toString(r.selection), e.builtin ? QStringLiteral("built in") : e.file,
                      r.description});
    }
    out() << table.render() << '\n'
          << catalog.entries.size() << " regimes; yours go in " << userRegimesDir() << " (docs/regimes.md)";
    if (!catalog.errors.isEmpty())
        out() << ", " << catalog.errors.size() << (catalog.errors.size() == 1 ? " broken file" : " broken files");
    out() << '\n';
    for (const QString& error : catalog.errors)
        out() << "  " << error << '\n';
    out().flush();
    return ExitSuccess;
}

} // namespace kwb::cli
