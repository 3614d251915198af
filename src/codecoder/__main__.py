from codecoder.cli.main import run

run()
