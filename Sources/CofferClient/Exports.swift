// What an app writes is `import CofferClient` (with `CofferStoreKit2` for the StoreKit adapter and `CofferUI` for
// the views): the types the SDK's public API speaks in come with it.
@_exported import CofferAPI
@_exported import CofferCore
@_exported import CofferStoreKit
