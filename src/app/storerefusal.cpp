#include "app/storerefusal.h"

#include "core/store/runstore.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>

namespace kwb::app {

namespace {

QString tr(const char* text)
{
    return QCoreApplication::translate("kwb::app::StoreRefusal", text);
}

} // namespace

QMessageBox* showStoreRefusal(QWidget* parent, const QString& path, const StoreFile& file, const QString& error,
                              const std::function<void()>& makeRunStore,
                              const std::function<void(const QString& folder)>& newRunStoreIn)
{
    using Kind = StoreFile::Kind;
    // What the file is, in RunStore's words; where it is a run store (or nothing), why it did not open.
    const bool store = file.kind == Kind::Missing || file.kind == Kind::Current || file.kind == Kind::Older;
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Open Run Database"),
                                store ? (error.startsWith(path) ? error : tr("Cannot open %1: %2").arg(path, error))
                                      : file.summary(),
                                QMessageBox::NoButton, parent);
    box->setObjectName(QStringLiteral("refusedDatabase"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    const QString folder = QFileInfo(path).absolutePath();
    const bool canMakeHere = file.kind == Kind::Empty && !file.readOnly;
    if (canMakeHere) {
        box->setInformativeText(tr("Make it a run store, or make a new run store in another file?"));
        QPushButton* make = box->addButton(tr("Make It a Run Store"), QMessageBox::AcceptRole);
        make->setObjectName(QStringLiteral("makeRunStore"));
        QObject::connect(make, &QPushButton::clicked, parent, makeRunStore, Qt::QueuedConnection); // once closed
    } else if (!store) {
        box->setInformativeText(tr("Make a new run store in another file? This one stays as it is."));
    }
    if (file.kind != Kind::Current && file.kind != Kind::Older) {
        QPushButton* elsewhere = box->addButton(tr("New Run Store Elsewhere…"), QMessageBox::ActionRole);
        elsewhere->setObjectName(QStringLiteral("newRunStore"));
        const QString start = file.readOnly || file.kind == Kind::Missing ? QDir::homePath() : folder;
        QObject::connect(
            elsewhere, &QPushButton::clicked, parent, [newRunStoreIn, start] { newRunStoreIn(start); },
            Qt::QueuedConnection);
    }
    box->addButton(canMakeHere || file.kind != Kind::Missing ? QMessageBox::Cancel : QMessageBox::Close);
    box->open();
    return box;
}

} // namespace kwb::app
