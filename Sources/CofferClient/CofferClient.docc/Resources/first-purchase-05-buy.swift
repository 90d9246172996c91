import CofferClient
import CofferStoreKit2
import CofferUI
import SwiftUI

@main
struct CreditsApp: App {
    @State private var model: CofferModel
    private let coffer: CofferSDK

    init() {
        let storeKit: any StoreKitProvider
        #if DEBUG
            // The App Store simulator while you try it; the real StoreKit for Sandbox, TestFlight and the App Store.
            storeKit = SimulatorStoreKit(baseURL: URL(string: "http://127.0.0.1:8090")!, account: "alice")
        #else
            storeKit = AppleStoreKit()
        #endif
        let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
        do {
            let file = Bundle.main.url(forResource: "catalog", withExtension: "json")!
            coffer = try CofferSDK(
                configuration: SDKConfiguration(
                    wallet: .device, environment: .sandbox, catalog: try Catalog(json: Data(contentsOf: file)),
                    deviceName: "Mac"),
                storeKit: storeKit, server: ServerClient(baseURL: URL(string: "http://127.0.0.1:8080")!),
                folder: support.appendingPathComponent("Coffer"), credentials: KeychainCredentialStore())
        } catch {
            fatalError("Coffer cannot start: \(error)")  // the bundled catalog is broken: a build problem
        }
        _model = State(initialValue: CofferModel(sdk: coffer))
    }

    var body: some Scene {
        WindowGroup {
            Form {
                Button("Buy 400,000 credits") {
                    Task { await model.purchase("com.example.credits.400k") }
                }
                PurchaseHistorySection(model: model)
            }
            .toolbar { BalanceTitle(model: model) }
            .task {
                _ = try? await coffer.launch()
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await model.run() }
                    group.addTask { await coffer.processUpdates() }
                    group.addTask { await coffer.listenForServerEvents() }
                }
            }
        }
    }
}
