#include "app/examplestudy.h"

#include "app/workbenchdata.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>

namespace kwb::app {

ExampleStudyUnpacker::ExampleStudyUnpacker(ExampleStudy which, QObject* parent)
    : QObject(parent)
    , m_which(which)
{}

bool ExampleStudyUnpacker::start(QString* error)
{
    const QString archive = exampleStudyArchive(m_which);
    if (archive.isEmpty()) {
        if (error)
            *error = tr("the example study is not installed");
        return false;
    }
    const QString target = exampleStudyDatabase(m_which);
    QDir().mkpath(QFileInfo(target).absolutePath());
    const QString partial = target + QStringLiteral(".part");
    auto* xz = new QProcess(this);
    xz->setStandardOutputFile(partial);
    connect(xz, &QProcess::finished, this, [this, xz, partial, target](int code, QProcess::ExitStatus status) {
        xz->deleteLater();
        QString why;
        if (status != QProcess::NormalExit || code != 0)
            why = tr("xz failed (%1): %2").arg(code).arg(QString::fromUtf8(xz->readAllStandardError()).trimmed());
        else if (!QFile::rename(partial, target))
            why = tr("cannot write %1").arg(target);
        if (!why.isEmpty()) {
            QFile::remove(partial);
            Q_EMIT failed(tr("Cannot open the example study: %1").arg(why));
            return;
        }
        Q_EMIT unpacked(target);
    });
    connect(xz, &QProcess::errorOccurred, this, [this, xz](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) {
            xz->deleteLater();
            Q_EMIT failed(tr("Cannot unpack the example study: xz is not installed (Debian: xz-utils)"));
        }
    });
    xz->start(QStringLiteral("xz"), {QStringLiteral("-dc"), archive});
    return true;
}

} // namespace kwb::app
