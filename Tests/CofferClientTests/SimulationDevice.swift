import CofferSimulator
import Foundation

@testable import CofferClient

extension Simulation {
    /// One app install on one device.
    final class Device {
        let name: String
        let account: String
        let folder: URL
        let credentials: URL
        /// StoreKit on this device: a new one for a new phone or a reinstall, whose download brings the App
        /// Store's current AppTransaction.
        var storeKit: SimulatedDevice
        let apple: SimulatedAppStore
        var app: CofferSDK?
        /// The step after which this launch of the app will die, if one is set.
        var dying: SDKStep?
        /// Apple's transactions of the account when the app was last reinstalled: the new local ledger starts
        /// from the backup and never sees them.
        var beforeReinstall: Set<String> = []

        init(name: String, account: String, folder: URL, credentials: URL, apple: SimulatedAppStore) {
            self.name = name
            self.account = account
            self.folder = folder
            self.credentials = credentials
            self.apple = apple
            storeKit = apple.device(account: account)
        }

        /// The app is installed anew (a new phone or a reinstall): StoreKit's cache starts empty.
        func installAnew() { storeKit = apple.device(account: account) }
    }
}
