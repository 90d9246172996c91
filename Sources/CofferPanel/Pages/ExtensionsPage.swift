import CofferAPI
import CofferAdmin
import CofferCore
import Foundation

/// `/admin/extensions`: an outage's remedy, every active subscriber of a product extended through Apple (owners),
/// and the latest such extensions with how far Apple got.
struct ExtensionsPage: PanelPage {
    static let template = "extensions"
    var section: PanelSection? { .dashboard }

    var products: [Product]
    var extensions: [Row]
    var canExtend: Bool

    struct Product: Sendable {
        var id, name: String
    }

    struct Row: Sendable {
        var at, product, days, by, requestIdentifier, progress: String
        var complete: Bool
    }

    init(extensions: [MassExtensionView], catalog: Catalog, canExtend: Bool, time: (Date) -> String) {
        products = catalog.products.filter { $0.kind == .autoRenewable }.map {
            Product(id: $0.id, name: $0.displayName)
        }
        self.canExtend = canExtend && !products.isEmpty
        self.extensions = extensions.map { item in
            let progress =
                switch item.complete {
                case true?:
                    "Complete\(item.completeDate.map { " at \(time($0))" } ?? ""): "
                        + "\(PanelText.count(Int(clamping: item.succeededCount ?? 0))) extended, "
                        + "\(PanelText.count(Int(clamping: item.failedCount ?? 0))) not"
                case false?:
                    "Under way: \(PanelText.count(Int(clamping: item.succeededCount ?? 0))) extended so far"
                case nil: "Apple did not say just now"
                }
            return Row(
                at: time(item.requestedAt), product: catalog.product(id: item.productId)?.displayName ?? item.productId,
                days: PanelText.count(item.days), by: item.requestedBy, requestIdentifier: item.requestIdentifier,
                progress: progress, complete: item.complete == true)
        }
    }
}
