#if canImport(SwiftUI)
    import CofferClient
    import CofferStoreKit
    import CofferStoreKit2
    import CofferUI
    import SwiftUI

    /// The app: a store with the balance title, credits, a subscription with its loyalty progress, and Settings
    /// with the Purchase History section.
    @main
    struct CreditsApp: App {
        @State private var model: CofferModel
        private let coffer: CofferSDK
        @Environment(\.scenePhase) private var phase

        init() {
            // Your Coffer server (`COFFER_SERVER` in the scheme's environment; `coffer serve` on this Mac while you
            // try it). With `COFFER_SIMULATOR` set, StoreKit is the App Store simulator's (`coffer appstore-sim
            // serve`); without, it is the real StoreKit (Sandbox testers, TestFlight, the App Store).
            let environment = ProcessInfo.processInfo.environment
            let server = URL(string: environment["COFFER_SERVER"] ?? "http://127.0.0.1:8080")!
            let storeKit: any StoreKitProvider =
                environment["COFFER_SIMULATOR"].flatMap(URL.init(string:)).map {
                    SimulatorStoreKit(baseURL: $0, account: environment["COFFER_ACCOUNT"] ?? "alice")
                } ?? AppleStoreKit()
            let sdk: CofferSDK
            do {
                sdk = try CofferSDK(
                    configuration: SDKConfiguration(
                        wallet: .device, environment: .sandbox, catalog: try Store.catalog(), deviceName: "CreditsApp"),
                    storeKit: storeKit, server: ServerClient(baseURL: server), folder: Store.folder(),
                    credentials: KeychainCredentialStore())
            } catch {
                // The bundled catalog or the app's folder is broken: a build problem, not a customer's.
                fatalError("Coffer cannot start: \(error)")
            }
            coffer = sdk
            _model = State(initialValue: CofferModel(sdk: sdk))
        }

        var body: some Scene {
            WindowGroup {
                TabView {
                    StoreView(model: model).tabItem { Label("Store", systemImage: "cart") }
                    Form { PurchaseHistorySection(model: model) }
                        .tabItem { Label("Settings", systemImage: "gear") }
                }
                // Seed 002's screen: the app is theirs, the subscription no longer needed, a Manage Subscription button.
                .loyaltyCelebration(model: model)
                .task {
                    _ = try? await coffer.launch()
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { await model.run() }
                        group.addTask { await coffer.processUpdates() }
                        group.addTask { await coffer.listenForServerEvents() }
                    }
                }
            }
            .onChange(of: phase) { _, phase in
                Task {
                    switch phase {
                    case .active: _ = try? await coffer.enteredForeground()
                    case .background: await coffer.enteredBackground()
                    default: break
                    }
                }
            }
        }
    }

    /// The store: the balance, what it sells with the App Store's prices, and loyalty progress.
    struct StoreView: View {
        let model: CofferModel
        @State private var products: [StoreProduct] = []

        var body: some View {
            NavigationStack {
                List {
                    ForEach(products, id: \.id) { product in
                        Button {
                            Task { await model.purchase(product.id) }
                        } label: {
                            HStack {
                                VStack(alignment: .leading) {
                                    Text(product.displayName)
                                    if let offer = product.subscription?.introductoryOffer,
                                        product.subscription?.isEligibleForIntroOffer == true
                                    {
                                        Text(offer.paymentMode == .freeTrial ? "Free trial" : "Intro offer")
                                            .font(.caption).foregroundStyle(.secondary)
                                    }
                                }
                                Spacer()
                                Text(product.displayPrice)
                            }
                        }
                    }
                    ForEach(model.loyalty) { progress in
                        ProgressView(
                            "Pro for life: \(progress.paidPeriods) of \(progress.requiredPeriods) months",
                            value: progress.fraction)
                    }
                    Button("Restore Purchases") { Task { _ = try? await model.sdk.restorePurchases() } }
                }
                .toolbar { BalanceTitle(model: model) }
                .task { products = (try? await model.sdk.products()) ?? [] }
            }
        }
    }
#else
    import CofferClient
    import CofferStoreKit
    import Foundation

    /// On Linux the app runs headless: the same SDK and model against the App Store simulator
    /// (`COFFER_SIMULATOR`, default `http://127.0.0.1:8090`) and a Coffer server (`COFFER_SERVER`, default
    /// `http://127.0.0.1:8080`). It buys credits, prints what the Settings screen would show, and exits.
    @main
    struct CreditsApp {
        @MainActor
        static func main() async throws {
            let environment = ProcessInfo.processInfo.environment
            let server = URL(string: environment["COFFER_SERVER"] ?? "http://127.0.0.1:8080")!
            let simulator = URL(string: environment["COFFER_SIMULATOR"] ?? "http://127.0.0.1:8090")!
            let folder = Store.folder()
            let sdk = try CofferSDK(
                configuration: SDKConfiguration(
                    wallet: .device, environment: .sandbox, catalog: try Store.catalog(), deviceName: "Linux",
                    identity: .install),
                storeKit: SimulatorStoreKit(baseURL: simulator, account: environment["COFFER_ACCOUNT"] ?? "alice"),
                server: ServerClient(baseURL: server), folder: folder,
                credentials: FileCredentialStore(path: folder.appendingPathComponent("identity.json").path))
            _ = try await sdk.launch()
            let model = CofferModel(sdk: sdk)
            let products = try await sdk.products()
            print("store: " + products.map { "\($0.displayName) \($0.displayPrice)" }.joined(separator: ", "))
            let result = await model.purchase(Store.credits)
            let failure = model.lastError
            print("bought: \(result.map { "\($0)" } ?? "nothing (\(failure ?? "no error"))")")
            await sdk.backupSettled()
            await model.refresh()
            print("balance: \(model.balance)")
            print("support id: \(model.supportId ?? "none")")
            for line in model.history {
                print(
                    "history: \(line.productName) \(line.item.credits) \(CofferModel.words(status: line.item.status))")
            }
            print("backup: \(model.backupWords)")
        }
    }
#endif
