#include "core/model/secrets.h"

#include <QJsonArray>
#include <QMutex>
#include <QMutexLocker>
#include <QSet>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

extern char** environ; // POSIX: the process environment, which getenv and unsetenv use

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

// $KWB_API_KEY, once taken out of the environment (under mutex()).
QString& heldApiKey()
{
    static QString value;
    return value;
}

// The memory the kernel shows as /proc/<pid>/cmdline and /proc/<pid>/environ: the strings that
// execve copied onto the new stack, fields 48 to 51 of /proc/self/stat (Linux 3.5 and later).
// All zero where they cannot be read: then nothing is overwritten.
struct StartBlocks
{
    std::uintptr_t argStart = 0, argEnd = 0, envStart = 0, envEnd = 0;
};

StartBlocks startBlocks()
{
    StartBlocks blocks;
#if defined(__linux__)
    std::ifstream in("/proc/self/stat");
    std::string line;
    if (!std::getline(in, line))
        return blocks;
    // The command name (field 2) may hold spaces and parentheses: count from after its last ')'.
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos)
        return blocks;
    std::istringstream fields(line.substr(close + 1));
    std::vector<std::string> tokens; // tokens[k] is field k + 3
    for (std::string token; fields >> token;)
        tokens.push_back(token);
    if (tokens.size() < 49)
        return blocks;
    const auto field = [&tokens](int n) { return std::uintptr_t(std::strtoull(tokens[n - 3].c_str(), nullptr, 10)); };
    blocks = {field(48), field(49), field(50), field(51)};
#endif
    return blocks;
}

bool inside(const char* text, std::size_t bytes, std::uintptr_t start, std::uintptr_t end)
{
    const auto at = reinterpret_cast<std::uintptr_t>(text);
    return start != 0 && at >= start && at + bytes <= end;
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
    // A key that contains another is replaced whole first.
    std::sort(out.begin(), out.end(), [](const QString& a, const QString& b) { return a.size() > b.size(); });
    return out;
}

bool isTakenFromEnvironment(const QString& name)
{
    return name.endsWith(QLatin1String("_API_KEY"), Qt::CaseInsensitive);
}

QStringList takeSecretsFromEnvironment()
{
    struct Found
    {
        QString name;
        char* value; // in the environment's own string, after the '='
        std::size_t bytes;
    };
    std::vector<Found> found;
    for (char** entry = environ; entry && *entry; ++entry) {
        char* text = *entry;
        char* equals = std::strchr(text, '=');
        if (!equals || equals == text)
            continue;
        const QString name = QString::fromLocal8Bit(text, equals - text);
        if (isTakenFromEnvironment(name))
            found.push_back({name, equals + 1, std::strlen(equals + 1)});
    }
    QStringList names;
    for (const Found& variable : found) {
        const QString value = QString::fromLocal8Bit(variable.value, qsizetype(variable.bytes));
        remember(value);
        if (names.contains(variable.name))
            continue; // a name given twice: getenv (and so the workbench) reads the first
        names << variable.name;
        if (variable.name == QLatin1String("KWB_API_KEY")) {
            QMutexLocker lock(&mutex());
            heldApiKey() = value;
        }
    }
    // Out of the environment first, so no reader meets a half-cleared value; unsetenv removes
    // every entry of a name. The strings themselves stay where they were, and are cleared next.
    for (const QString& name : std::as_const(names))
        qunsetenv(name.toLocal8Bit().constData());
    const StartBlocks blocks = startBlocks();
    for (const Found& variable : found) {
        // Only the block execve wrote: a value setenv or putenv made lives elsewhere (on the heap,
        // or in a string literal that must not be written) and /proc does not show it.
        if (inside(variable.value, variable.bytes, blocks.envStart, blocks.envEnd))
            std::memset(variable.value, 0, variable.bytes);
    }
    return names;
}

int takeSecretsFromArguments(int argc, char** argv)
{
    static const char kOption[] = "--api-key";
    static const std::size_t kOptionBytes = sizeof(kOption) - 1;
    // The strings argv points at from now on: they live as long as the process.
    static std::vector<std::unique_ptr<char[]>> copies;
    const StartBlocks blocks = startBlocks();
    int taken = 0;
    for (int i = 1; i < argc && argv[i]; ++i) {
        int slot = -1;
        char* value = nullptr;
        if (std::strcmp(argv[i], kOption) == 0) {
            if (i + 1 >= argc || !argv[i + 1])
                break; // no value: CLI11 says so
            slot = ++i;
            value = argv[slot];
        } else if (std::strncmp(argv[i], kOption, kOptionBytes) == 0 && argv[i][kOptionBytes] == '=') {
            slot = i;
            value = argv[slot] + kOptionBytes + 1;
        } else {
            continue;
        }
        const std::size_t valueBytes = std::strlen(value);
        remember(QString::fromLocal8Bit(value, qsizetype(valueBytes)));
        ++taken;
        const std::size_t bytes = std::strlen(argv[slot]);
        if (valueBytes == 0 || !inside(argv[slot], bytes, blocks.argStart, blocks.argEnd))
            continue; // not the block /proc shows (a caller's own array): nothing to hide
        copies.push_back(std::make_unique<char[]>(bytes + 1));
        std::memcpy(copies.back().get(), argv[slot], bytes + 1);
        argv[slot] = copies.back().get();
        std::memset(value, '*', valueBytes);
    }
    return taken;
}

QString environmentApiKey()
{
    QMutexLocker lock(&mutex());
    return heldApiKey();
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
