"""The words the Forge query is shaped with (forge/query.py), Spanish and English.

Every word is written without accents and in lower case: the prompt's words are compared the
same way (``qué`` and ``que`` are one word), so a prompt typed without accents is read alike.

- ``FILLER``: what carries no topic: articles, pronouns, prepositions, conjunctions, greetings,
  courtesy, request phrasing ("quiero", "could you", "please"), common auxiliaries.
- ``MAKING``: the verbs of a request to make something; dropped from the query too, but with a
  component word they make the request one for the recipe that writes a component.
- ``COMPONENT``: the words for a component.
- ``JCOMPONENT`` and ``TOTAL5``: the words that say which product a prompt is about; the
  products' own names (``NAMES``) are not searched, the product filter says them.
- ``GLOSSARY``: Spanish topic words and their English form, in which Forge's pages are written
  (seed 000: "the Spanish words of the topic are translated").
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    """The words of a block of text: the lists below are written as prose is, many to a line."""
    return frozenset(text.split())


FILLER = _words("""
a al algo alguien algun alguna algunas alguno algunos alla alli ante antes aqui asi aun aunque bien bueno buenas buenos
cada casi como con contra cual cuales cualquier cuando cuanto de del desde donde dos e el ella ellas ellos en entonces
entre era eres es esa esas ese eso esos esta estas este esto estos estoy estas esta estan favor fue gracias ha hay
hola la las le les lo los luego mas me mi mis mucho muy nada ni no nos nosotros o os otra otras otro otros para pero
poco por porfa porque pues que quien quiero quisiera quieres queria necesito necesitas necesita podrias puedes puede
podria podemos quiza quizas se sea segun ser si sin sobre solo son soy su sus tal tambien tan tanto te tengo tiene
tienes ti tu tus u un una unas uno unos usted ustedes va vamos voy y ya yo saludos dime dame ayuda ayudame ayudar
explica explicame ensename mostrar muestra muestrame manera forma modo mejor usar uso utilizar tener deberia debo
decir saber sabes cosa cosas ejemplo ok vale oye
about above after again all also am an and any anything are as at be been before being below between both but by can
could did do does doing done down during each few for from further get got had has have having he hello her here hers
hey hi how i if in into is it its itself just let like me mine more most my myself need needs no nor not now of off
on once only or other our ours out over own please same she should so some something such than thank thanks that the
their theirs them then there these they this those through to too under until up us use using very want wanted
wants was we were what when where which while who whom why will with would you your yours yourself yourselves ok okay
show shows showing tell explain help way best example examples kind sort thing things able know
""")

MAKING = _words("""
crear crea creame creo cree hacer haz hazme hago haga escribir escribe escribeme genera generar generame construir
construye implementar implementa anadir anade agregar agrega programar programa desarrollar desarrolla nuevo nueva
nuevos nuevas montar monta hagas hacerme hazlo crees crearme escribas generes construyas programes anadas agregues
make create write build generate implement add develop code new
""")

COMPONENT = frozenset({"componente", "componentes", "component", "components"})

NAMES = {
    "jcomponent": frozenset({"jcomponent", "jcomponents", "j-component", "jcomponent20", "jc"}),
    "total5": frozenset({"total.js", "totaljs", "total5", "total.js5", "totaljs5"}),
}

JCOMPONENT = COMPONENT | _words("""
ui interfaz frontend front-end navegador browser vista html css plantilla template binding bind setter getter
formulario form boton button input entrada dropdown popup modal ventana window grid tabla table lista list datagrid
icono icon estilo style jquery cliente client widget
""")

TOTAL5 = _words("""
servidor server backend back-end api endpoint ruta rutas route routes routing controlador controller controllers
esquema schema schemas accion acciones action actions newaction route() base nosql textdb sql modulo module modules
definicion definitions plugin plugins middleware auth autenticacion authentication sesion session websocket
flowstream flow correo email mail cron tarea tareas task tasks config configuracion
""")

GLOSSARY = {
    "componente": "component", "componentes": "components", "ruta": "route", "rutas": "routes", "esquema": "schema",
    "esquemas": "schemas", "accion": "action", "acciones": "actions", "formulario": "form", "formularios": "forms",
    "tabla": "table", "tablas": "tables", "boton": "button", "botones": "buttons", "lista": "list", "listas": "lists",
    "usuario": "user", "usuarios": "users", "correo": "email", "archivo": "file", "archivos": "files", "fichero": "file",
    "ficheros": "files", "subir": "upload", "subida": "upload", "descargar": "download", "datos": "data",
    "pagina": "page", "paginas": "pages", "ventana": "window", "fecha": "date", "fechas": "dates",
    "validar": "validate", "validacion": "validation", "enviar": "send", "envio": "send", "plantilla": "template",
    "plantillas": "templates", "vista": "view", "vistas": "views", "controlador": "controller",
    "controladores": "controllers", "modelo": "model", "modelos": "models", "autenticacion": "authentication",
    "sesion": "session", "sesiones": "sessions", "cliente": "client", "servidor": "server", "prueba": "test",
    "pruebas": "tests", "buscar": "search", "busqueda": "search", "filtro": "filter", "filtros": "filters",
    "grafico": "chart", "graficos": "charts", "imagen": "image", "imagenes": "images", "icono": "icon",
    "iconos": "icons", "texto": "text", "entrada": "input", "salida": "output", "contador": "counter",
    "modulo": "module", "modulos": "modules", "definicion": "definition", "definiciones": "definitions",
    "tarea": "task", "tareas": "tasks", "configuracion": "configuration", "interfaz": "interface",
    "navegador": "browser", "estilo": "style", "estilos": "styles", "evento": "event", "eventos": "events",
    "mensaje": "message", "mensajes": "messages", "registro": "register", "iniciar": "start", "inicio": "start",
    "cerrar": "close", "borrar": "delete", "eliminar": "delete", "actualizar": "update", "guardar": "save",
    "leer": "read", "listar": "list", "ocultar": "hide", "pedido": "order", "pedidos": "orders",
    "producto": "product", "productos": "products", "precio": "price", "carrito": "cart", "contrasena": "password",
    "clave": "key", "permiso": "permission", "permisos": "permissions", "rol": "role", "base": "database", "consulta": "query", "consultas": "queries", "errores": "errors",
    "selector": "select", "desplegable": "dropdown", "casilla": "checkbox", "calendario": "calendar",
    "notificacion": "notification", "notificaciones": "notifications", "enlace": "link", "enlaces": "links",
    "arrastrar": "drag", "soltar": "drop", "cargar": "load", "carga": "load", "tiempo": "time", "devolver": "return",
    "devuelva": "return", "devuelve": "return",
}
