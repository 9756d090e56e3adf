#pragma once
// Recorded worker responses for the tasks tests (data/record.py writes them from a real
// kwb-worker) and the protocol's golden files.

#include "core/tasks/taskcatalog.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QTest>

namespace kwb::test {

inline QJsonDocument readJsonFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(file.readAll(), &error);
    if (error.error != QJsonParseError::NoError)
        qFatal("%s: %s", qPrintable(path), qPrintable(error.errorString()));
    return document;
}

inline QString dataPath(const char* name)
{
    return QStringLiteral(KWB_TASKS_TEST_DATA "/") + QLatin1String(name);
}

/// The recorded `tasks` response: L1/1, L1/4, L1/5, L2/1, L2/2, L2/6, L2/9, L3/1, L3/4.
inline QJsonObject recordedTasks()
{
    return readJsonFile(dataPath("tasks.json")).object();
}

/// The recorded `tasks` response for tests/fixtures/tasks_bad: one task and loader errors.
inline QJsonObject recordedBadTasks()
{
    return readJsonFile(dataPath("tasks_bad.json")).object();
}

/// The recorded `analyze` responses, one per task of recordedTasks().
inline QJsonArray recordedAnalyses()
{
    return readJsonFile(dataPath("analyze.json")).array();
}

inline QJsonObject goldenResponse(const char* name)
{
    return readJsonFile(QStringLiteral(KWB_PROTOCOL_GOLDEN_DIR "/") + QLatin1String(name)).object();
}

/// Feeds a catalog the recorded tasks and, when asked, every recorded analysis.
inline void feedRecorded(TaskCatalog& catalog, bool withAnalyses = true)
{
    QVERIFY(catalog.applyTasksResponse(recordedTasks()));
    if (withAnalyses)
        for (const QJsonValue& v : recordedAnalyses())
            QVERIFY(catalog.applyAnalyzeResponse(v.toObject()));
}

inline QStringList replayArguments(const QStringList& extra = {})
{
    return QStringList{QStringLiteral("--tasks"), dataPath("tasks.json"), QStringLiteral("--analyses"),
                       dataPath("analyze.json")} +
           extra;
}

} // namespace kwb::test
