"""What every layer of Sirius may use: errors, the settings of a run, the target GPU. It imports
nothing else of the package."""
