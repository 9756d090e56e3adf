#pragma once
// Small readers shared by the decoders of src/core/protocol (and only by them): typed reads of a
// JSON value with the protocol's conventions (null and absent alike, numbers finite).

#include "core/protocol/protocolnames.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>

#include <cmath>
#include <optional>

namespace kwb::protocoljson {

/// The protocol's names (protocolnames.h), for the decoders that read by them.
namespace Request = ProtocolNames::Request;
namespace Field = ProtocolNames::Field;
namespace Key = ProtocolNames::Key;

inline QJsonValue at(const QJsonObject& o, const char* key)
{
    return o.value(QLatin1String(key));
}
inline QString str(const QJsonObject& o, const char* key, const QString& fallback = QString())
{
    return o.value(QLatin1String(key)).toString(fallback);
}
inline QJsonObject obj(const QJsonObject& o, const char* key)
{
    return o.value(QLatin1String(key)).toObject();
}
inline QJsonArray arr(const QJsonObject& o, const char* key)
{
    return o.value(QLatin1String(key)).toArray();
}
inline bool flag(const QJsonObject& o, const char* key, bool fallback = false)
{
    return o.value(QLatin1String(key)).toBool(fallback);
}
inline std::optional<bool> optFlag(const QJsonObject& o, const char* key)
{
    const QJsonValue v = o.value(QLatin1String(key));
    return v.isBool() ? std::optional<bool>(v.toBool()) : std::nullopt;
}
/// A finite number, or nullopt.
inline std::optional<double> optNumber(const QJsonValue& v)
{
    if (!v.isDouble() || !std::isfinite(v.toDouble()))
        return std::nullopt;
    return v.toDouble();
}
inline std::optional<double> optNumber(const QJsonObject& o, const char* key)
{
    return optNumber(o.value(QLatin1String(key)));
}
inline double number(const QJsonObject& o, const char* key, double fallback = 0)
{
    return optNumber(o, key).value_or(fallback);
}
inline std::optional<int> optInt(const QJsonObject& o, const char* key)
{
    const std::optional<double> d = optNumber(o, key);
    return d ? std::optional<int>(int(*d)) : std::nullopt;
}
inline int integer(const QJsonObject& o, const char* key, int fallback = 0)
{
    return optInt(o, key).value_or(fallback);
}
/// A positive finite number, or 0.
inline double positive(const QJsonValue& v)
{
    const std::optional<double> d = optNumber(v);
    return d && *d > 0 ? *d : 0.0;
}
inline QStringList strings(const QJsonObject& o, const char* key)
{
    QStringList list;
    for (const QJsonValue& v : arr(o, key))
        list.append(v.toString());
    return list;
}
/// A shape: an array of integers.
inline QList<qint64> shape(const QJsonValue& value)
{
    QList<qint64> s;
    for (const QJsonValue& v : value.toArray())
        s.append(qint64(v.toDouble()));
    return s;
}

} // namespace kwb::protocoljson
