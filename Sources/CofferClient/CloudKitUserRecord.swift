#if canImport(CloudKit)
    import CloudKit

    extension SDKConfiguration {
        /// Reads the customer's CloudKit user record name (`CKContainer.userRecordID()`), for
        /// ``SDKConfiguration/cloudKitUserRecordName``: the container the app's CloudKit setup used, or the default
        /// one. `nil` when the device has no iCloud account; CloudKit's other errors (the network, throttling) are
        /// thrown, so the SDK asks again later instead of registering a new customer.
        public static func cloudKitUserRecordName(container: String? = nil) -> @Sendable () async throws -> String? {
            {
                let cloud = container.map { CKContainer(identifier: $0) } ?? CKContainer.default()
                do {
                    return try await cloud.userRecordID().recordName
                } catch let error as CKError where error.code == .notAuthenticated {
                    return nil
                }
            }
        }

        /// Fetches a single-use CloudKit web auth token of the device's iCloud user (`CKFetchWebAuthTokenOperation`
        /// with the container's API token from CloudKit Console), for ``SDKConfiguration/cloudKitWebAuthToken``:
        /// the server asks CloudKit Web Services whose it is before handing over the imported customer. `nil` when
        /// the device has no iCloud account; CloudKit's other errors are thrown, so the SDK asks again later.
        public static func cloudKitWebAuthToken(container: String? = nil, apiToken: String)
            -> @Sendable () async throws -> String?
        {
            {
                let cloud = container.map { CKContainer(identifier: $0) } ?? CKContainer.default()
                do {
                    return try await withCheckedThrowingContinuation { continuation in
                        let operation = CKFetchWebAuthTokenOperation(apiToken: apiToken)
                        operation.fetchWebAuthTokenResultBlock = { result in continuation.resume(with: result) }
                        cloud.privateCloudDatabase.add(operation)
                    }
                } catch let error as CKError where error.code == .notAuthenticated {
                    return nil
                }
            }
        }
    }
#endif
