#include "core/model/secrets.h"

#include <QJsonArray>
#include <QMutex>
#include <QMutexLocker>
#include <QSet>

#include <algorithm>

namespace kwb::secrets {

namespace {

// Workers and stores may run on other threads than the client that learns the key.
QMutex& mutex()
{
    static QMutex m;
    return m;
}

QSet<QString>& remembered()
{
    static QSet<QString> values;
    return values;
}

} // namespace

void remember(const QString& secret)
{
    if (secret.size() < kMinSecretChars)
        return;
    QMutexLocker lock(&mutex());
    remembered().insert(secret);
}

QStringList known()
{
    QStringList out;
    {
        QMutexLocker lock(&mutex());
        out = QStringList(remembered().cbegin(), remembered().cend());
    }
    const QString env = qEnvironmentVariable("KWB_API_KEY");
    if (env.size() >= kMinSecretChars && !out.contains(env))
        out << env;
    // A key that contains another is replaced whole first.
    std::sort(out.begin(), out.end(), [](const QString& a, const QString& b) { return a.size() > b.size(); });
    return out;
}

namespace {

QString scrubWith(const QStringList& secrets, const QString& text)
{
    QString out = text;
    for (const QString& secret : secrets)
        if (out.contains(secret))
            out.replace(secret, kRedacted);
    return out;
}

QJsonValue scrubWith(const QStringList& secrets, const QJsonValue& value);

QJsonObject scrubWith(const QStringList& secrets, const QJsonObject& object)
{
    QJsonObject out;
    for (auto it = object.begin(); it != object.end(); ++it)
        out.insert(scrubWith(secrets, it.key()), scrubWith(secrets, it.value()));
    return out;
}

QJsonValue scrubWith(const QStringList& secrets, const QJsonValue& value)
{
    switch (value.type()) {
    case QJsonValue::String: return scrubWith(secrets, value.toString());
    case QJsonValue::Array: {
        QJsonArray out;
        for (const QJsonValue& item : value.toArray())
            out.append(scrubWith(secrets, item));
        return out;
    }
    case QJsonValue::Object: return scrubWith(secrets, value.toObject());
    default: return value;
    }
}

} // namespace

QString scrub(const QString& text)
{
    return scrubWith(known(), text);
}

QJsonValue scrub(const QJsonValue& value)
{
    const QStringList secrets = known();
    return secrets.isEmpty() ? value : scrubWith(secrets, value);
}

QJsonObject scrub(const QJsonObject& object)
{
    const QStringList secrets = known();
    return secrets.isEmpty() ? object : scrubWith(secrets, object);
}

} // namespace kwb::secrets
