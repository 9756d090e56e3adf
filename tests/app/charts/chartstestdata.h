#pragma once
// The chart tests' data files (tests/app/charts/data, see its README.md).

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QTest>

inline QJsonObject loadChartData(const QString& name)
{
    QFile f(QStringLiteral(KWB_CHARTS_DATA "/") + name);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot open test data %s", qPrintable(f.fileName()));
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        qFatal("test data %s is not a JSON object: %s", qPrintable(f.fileName()), qPrintable(error.errorString()));
    return doc.object();
}
