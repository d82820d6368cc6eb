"""The package version (quadrants.__version__), apart from the package's
__init__ so modules of the package can read it without importing the whole
package."""
__version__ = "0.1.0"
