#include "app/editor/syntaxhighlighting.h"

#include "app/editor/builtinhighlighter.h"

#include <QFileInfo>
#include <QGuiApplication>
#include <QPalette>
#include <QTextDocument>

#ifdef KWB_HAVE_KSYNTAXHIGHLIGHTING
#include <KSyntaxHighlighting/Definition>
#include <KSyntaxHighlighting/Repository>
#include <KSyntaxHighlighting/SyntaxHighlighter>
#include <KSyntaxHighlighting/Theme>
#endif

namespace kwb::app {

#ifdef KWB_HAVE_KSYNTAXHIGHLIGHTING
namespace {

/// Loading the definitions reads a few hundred XML files: once per process, on first use.
KSyntaxHighlighting::Repository& repository()
{
    static KSyntaxHighlighting::Repository repo;
    return repo;
}

/// The library's definition for a language, or an invalid one where it has none (then the
/// built-in highlighter serves).
KSyntaxHighlighting::Definition definitionFor(Language language)
{
    switch (language) {
    case Language::Cuda: // no CUDA definition: C++ covers the syntax, not __global__ & co.
    case Language::Cpp: return repository().definitionForName(QStringLiteral("C++"));
    case Language::Python: return repository().definitionForName(QStringLiteral("Python"));
    case Language::Markdown: return repository().definitionForName(QStringLiteral("Markdown"));
    case Language::Mustache: return repository().definitionForName(QStringLiteral("Mustache/Handlebars (HTML)"));
    case Language::Plain: break;
    }
    return {};
}

} // namespace
#endif

bool isDarkPalette(const QPalette& palette)
{
    return palette.color(QPalette::Base).lightness() < 128;
}

QString languageName(Language language)
{
    switch (language) {
    case Language::Plain: return QStringLiteral("Plain text");
    case Language::Cuda: return QStringLiteral("CUDA");
    case Language::Cpp: return QStringLiteral("C++");
    case Language::Python: return QStringLiteral("Python (TorchScript)");
    case Language::Markdown: return QStringLiteral("Markdown");
    case Language::Mustache: return QStringLiteral("Mustache");
    }
    return {};
}

Language languageForFileName(const QString& fileName)
{
    const QString suffix = QFileInfo(fileName).suffix().toLower();
    if (suffix == QLatin1String("cu") || suffix == QLatin1String("cuh"))
        return Language::Cuda;
    for (const char* s : {"c", "cc", "cpp", "cxx", "h", "hh", "hpp", "hxx"})
        if (suffix == QLatin1String(s))
            return Language::Cpp;
    if (suffix == QLatin1String("py"))
        return Language::Python;
    if (suffix == QLatin1String("md") || suffix == QLatin1String("markdown"))
        return Language::Markdown;
    if (suffix == QLatin1String("mustache") || suffix == QLatin1String("hbs"))
        return Language::Mustache;
    return Language::Plain;
}

Language languageForFenceTag(const QString& tag)
{
    const QString t = tag.trimmed().toLower();
    if (t == QLatin1String("cuda") || t == QLatin1String("cu"))
        return Language::Cuda;
    for (const char* s : {"cpp", "c++", "cxx", "c", "h", "hpp"})
        if (t == QLatin1String(s))
            return Language::Cpp;
    if (t == QLatin1String("python") || t == QLatin1String("py") || t == QLatin1String("torchscript"))
        return Language::Python;
    if (t == QLatin1String("markdown") || t == QLatin1String("md"))
        return Language::Markdown;
    if (t == QLatin1String("mustache"))
        return Language::Mustache;
    return Language::Plain;
}

QSyntaxHighlighter* createHighlighter(QTextDocument* document, Language language)
{
    if (!document || language == Language::Plain)
        return nullptr;
    const QPalette palette = QGuiApplication::palette();
#ifdef KWB_HAVE_KSYNTAXHIGHLIGHTING
    const KSyntaxHighlighting::Definition definition = definitionFor(language);
    if (definition.isValid()) {
        auto* highlighter = new KSyntaxHighlighting::SyntaxHighlighter(document);
        highlighter->setTheme(repository().themeForPalette(palette));
        highlighter->setDefinition(definition);
        return highlighter;
    }
#endif
    return new BuiltinHighlighter(document, language, isDarkPalette(palette));
}

void applyPalette(QSyntaxHighlighter* highlighter, const QPalette& palette)
{
    if (auto* builtin = qobject_cast<BuiltinHighlighter*>(highlighter)) {
        builtin->setDark(isDarkPalette(palette));
        return;
    }
#ifdef KWB_HAVE_KSYNTAXHIGHLIGHTING
    if (auto* k = dynamic_cast<KSyntaxHighlighting::SyntaxHighlighter*>(highlighter)) {
        const KSyntaxHighlighting::Theme theme = repository().themeForPalette(palette);
        if (theme.name() != k->theme().name()) {
            k->setTheme(theme);
            k->rehighlight();
        }
    }
#endif
}

QString highlighterBackend()
{
#ifdef KWB_HAVE_KSYNTAXHIGHLIGHTING
    return QStringLiteral("KSyntaxHighlighting %1").arg(QStringLiteral(KWB_KSYNTAXHIGHLIGHTING_VERSION));
#else
    return QStringLiteral("built-in");
#endif
}

} // namespace kwb::app
