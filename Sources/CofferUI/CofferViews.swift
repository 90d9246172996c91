// SwiftUI exists on Apple platforms only; elsewhere this module is empty. The views are thin: everything they
// show and every word they say comes from `CofferModel`, which is tested on Linux.
#if canImport(SwiftUI)
    import CofferClient
    import SwiftUI
    #if canImport(UIKit)
        import UIKit
    #elseif canImport(AppKit)
        import AppKit
    #endif

    /// The Settings screen's "Purchase History" section: the transaction log newest first (product name,
    /// credits, status, date, transaction id), the Support ID with tap-to-copy, "Verify Purchases" with its
    /// results in words, and the backup's status with a match indicator.
    public struct PurchaseHistorySection: View {
        let model: CofferModel
        @State private var copied = false

        /// The section over `model`.
        public init(model: CofferModel) { self.model = model }

        /// The section.
        public var body: some View {
            Section("Purchase History") {
                if model.history.isEmpty {
                    Text("No purchases yet").foregroundStyle(.secondary)
                }
                ForEach(model.history) { line in
                    VStack(alignment: .leading, spacing: 2) {
                        HStack {
                            Text(line.productName).font(.headline)
                            Spacer()
                            if line.item.credits != 0 {
                                Text("\(line.item.credits.formatted()) credits").monospacedDigit()
                            }
                        }
                        HStack {
                            Text(CofferModel.words(status: line.item.status))
                            Spacer()
                            Text(line.item.purchaseDate, style: .date)
                        }
                        .font(.caption)
                        Text(line.item.transactionId).font(.caption2.monospaced()).foregroundStyle(.secondary)
                    }
                }
                if let supportId = model.supportId {
                    Button {
                        Self.copy(supportId)
                        copied = true
                    } label: {
                        LabeledContent("Support ID") {
                            Text(copied ? "Copied" : supportId).font(.body.monospaced())
                        }
                    }
                    .accessibilityHint("Copies your Support ID for a message to support")
                }
                Button("Move to my Apple account") { Task { await model.moveToAppleAccount() } }
                    .accessibilityHint(
                        "Shows a code to read to support, who moves these purchases to your Apple account")
                if let words = model.mergeCodeWords {
                    Text(words).font(.caption).textSelection(.enabled)
                }
                Button("Verify Purchases") { Task { await model.verifyPurchases() } }
                ForEach(model.verifyResults, id: \.self) { result in
                    Text(result).font(.caption)
                }
                LabeledContent("Backup") {
                    Label(
                        model.backupWords,
                        systemImage: model.backupMatches ? "checkmark.circle.fill" : "exclamationmark.circle"
                    )
                    .foregroundStyle(model.backupMatches ? Color.green : Color.orange)
                }
            }
        }

        private static func copy(_ text: String) {
            #if canImport(UIKit) && !os(watchOS) && !os(tvOS)
                UIPasteboard.general.string = text
            #elseif canImport(AppKit)
                NSPasteboard.general.clearContents()
                NSPasteboard.general.setString(text, forType: .string)
            #endif
        }
    }

    /// The store's title: the balance with a refresh button.
    public struct BalanceTitle: View {
        let model: CofferModel

        /// The title over `model`.
        public init(model: CofferModel) { self.model = model }

        /// The title.
        public var body: some View {
            HStack(spacing: 8) {
                Text(model.balance.formatted()).font(.title2.bold()).monospacedDigit()
                Text("credits").foregroundStyle(.secondary)
                Button {
                    Task { await model.refresh() }
                } label: {
                    Image(systemName: "arrow.clockwise")
                }
                .disabled(model.isRefreshing)
                .accessibilityLabel("Refresh balance")
            }
        }
    }

    /// Shows a celebration once when the customer first earns a group's loyalty lifetime.
    struct LoyaltyCelebration<Celebration: View>: ViewModifier {
        let model: CofferModel
        let celebration: (String) -> Celebration
        @State private var shown = false
        @State private var group = ""

        func body(content: Content) -> some View {
            content
                .onAppear { show(model.celebration) }
                .onChange(of: model.celebration) { _, earned in show(earned) }
                .sheet(isPresented: $shown, onDismiss: { model.celebrated() }, content: { celebration(group) })
        }

        private func show(_ earned: String?) {
            guard let earned else { return }
            group = earned
            shown = true
        }
    }

    /// The loyalty celebration as seed 002 shows it: the app is theirs, they no longer need the subscription, and a
    /// button to manage it (the App Store's sheet, where they can cancel).
    public struct LoyaltyCelebrationView: View {
        let model: CofferModel
        let words: CofferModel.CelebrationWords
        @Environment(\.dismiss) private var dismiss

        /// The celebration over `model`, naming the app as `appName` (its name under the icon by default).
        public init(model: CofferModel, appName: String = CofferModel.appName()) {
            self.model = model
            words = CofferModel.celebrationWords(appName: appName)
        }

        /// The view.
        public var body: some View {
            VStack(spacing: 16) {
                Image(systemName: "gift.fill").font(.system(size: 56)).foregroundStyle(.tint)
                    .accessibilityHidden(true)
                Text(words.title).font(.title.bold()).multilineTextAlignment(.center)
                Text(words.message).multilineTextAlignment(.center).foregroundStyle(.secondary)
                Button(words.manage) {
                    Task { await model.manageSubscriptions() }
                }
                .buttonStyle(.borderedProminent)
                Button(words.close) { dismiss() }
            }
            .padding(32)
        }
    }

    extension View {
        /// Shows ``LoyaltyCelebrationView`` once, when the customer first earns a group's loyalty lifetime
        /// (``CofferModel/celebration``); dismissing it marks it celebrated.
        public func loyaltyCelebration(model: CofferModel, appName: String = CofferModel.appName()) -> some View {
            modifier(LoyaltyCelebration(model: model) { _ in LoyaltyCelebrationView(model: model, appName: appName) })
        }

        /// Shows `celebration` (given the subscription group) once, when the customer first earns a group's
        /// loyalty lifetime (``CofferModel/celebration``); dismissing it marks it celebrated.
        public func loyaltyCelebration<Celebration: View>(
            model: CofferModel, @ViewBuilder celebration: @escaping (String) -> Celebration
        ) -> some View {
            modifier(LoyaltyCelebration(model: model, celebration: celebration))
        }
    }
#endif
