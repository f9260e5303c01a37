import CopyEntitiesStrategy
import Foundation
import IOSStrategy
import ManualStrategy
import NoneStrategy
import USMRepairCore

/// The one list of built-in migration strategies (each a target under Plugins/<Name>Strategy).
let builtInStrategies: [any MigrationStrategy.Type] = [
    IOSStrategy.self, CopyEntitiesStrategy.self, ManualStrategy.self, NoneStrategy.self,
]
