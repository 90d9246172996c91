import CofferCore
import CofferSimulator
import Foundation

/// The simulated App Store the test suites sell through, made in one place.
public enum SimulatedApple {
    /// The app's bundle id in the suites.
    public static let bundleId = "com.example.coffer"
    /// 2026-01-01T00:00:00Z.
    public static let start = Date(timeIntervalSince1970: 1_767_225_600)

    /// Apple selling `products` (one consumable of 100 credits unless given) from `start`: its signing chain, the
    /// catalog and the simulator.
    public static func make(
        at start: Date,
        selling products: [CatalogProduct] = [
            CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100)
        ]
    ) throws -> (SimulatorPKI, Catalog, SimulatedAppStore) {
        let pki = try SimulatorPKI(
            validFrom: start.addingTimeInterval(-86_400), leafValidUntil: start.addingTimeInterval(800 * 86_400))
        let catalog = try Catalog(products: products)
        let apple = SimulatedAppStore(
            catalog: catalog, configuration: .init(bundleId: bundleId, appAppleId: 1_234),
            signer: try pki.signer(), clock: SimulatorClock(start: start))
        return (pki, catalog, apple)
    }
}
